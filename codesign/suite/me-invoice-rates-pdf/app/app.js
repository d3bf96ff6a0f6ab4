import { discount, invoice, lines, rateCard, vatRate } from "./data.js";
import { hoursLabel, lineAmount, money, percent, totals } from "./calc.js";

const state = lines.map((l) => ({ ...l }));
const $ = (id) => document.getElementById(id);
const agreedRate = (role) => rateCard.rates.find((r) => r.role === role)?.rate;

function renderHeader() {
  $("invoice-number").textContent = invoice.number;
  $("issued").textContent = invoice.issued;
  $("due").textContent = invoice.due;
  $("due-date").textContent = invoice.due;
  $("client").innerHTML = invoice.client.replace(/&/g, "&amp;").replace("\n", "<br>");
  $("project").textContent = invoice.project;
}

function renderRateCard() {
  $("rate-card-ref").textContent = `Rate card ${rateCard.ref}, signed ${rateCard.signed}`;
  $("rate-card").innerHTML = rateCard.rates
    .map((r) => `<li><span>${r.role}</span><span>${money(r.rate).replace(".00", "")}/h</span></li>`)
    .join("");
}

function renderLines() {
  const body = $("lines");
  body.innerHTML = "";
  for (const line of state) {
    const tr = document.createElement("tr");
    tr.dataset.id = line.id;
    tr.innerHTML = `
      <td class="role">${line.role}<span class="flag" hidden></span></td>
      <td class="desc">${line.description}</td>
      <td class="num"><input name="hours" type="number" min="0" step="0.5" value="${line.hours}"
        aria-label="Hours for ${line.role}"></td>
      <td class="num"><input name="rate" type="number" min="0" step="1" value="${line.rate}"
        aria-label="Hourly rate for ${line.role}"></td>
      <td class="num amount"></td>`;
    for (const field of ["hours", "rate"]) {
      tr.querySelector(`input[name=${field}]`).addEventListener("input", (ev) => {
        line[field] = Number.parseFloat(ev.target.value) || 0;
        renderLine(tr, line);
        renderTotals();
      });
    }
    body.appendChild(tr);
    renderLine(tr, line);
  }
}

function renderLine(tr, line) {
  tr.querySelector(".amount").textContent = money(lineAmount(line));
  const agreed = agreedRate(line.role);
  const flag = tr.querySelector(".flag");
  flag.hidden = agreed === undefined || agreed === line.rate;
  flag.textContent = flag.hidden ? "" : `Differs from rate card (${money(agreed)}/h)`;
}

function renderTotals() {
  const t = totals(state, discount.rate, vatRate);
  $("subtotal").textContent = money(t.subtotal);
  $("discount-label").textContent = `${discount.label} (${percent(discount.rate)})`;
  $("discount").textContent = `−${money(t.discount)}`;
  $("vat-label").textContent = `VAT (${percent(vatRate)})`;
  $("vat").textContent = money(t.vat);
  $("total").textContent = money(t.total);
  $("amount-due").textContent = money(t.total);
  const roles = state.filter((l) => l.hours > 0).length;
  $("summary").textContent =
    `${hoursLabel(t.hours)} across ${roles} roles for ${invoice.client.split("\n")[0]}, ` +
    `total due ${money(t.total)} (including ${money(t.vat)} VAT).`;
}

renderHeader();
renderRateCard();
renderLines();
renderTotals();
