import { budgets, expenses } from "./data.js";

const money = (n) => `$${n.toFixed(2)}`;
const state = expenses.map((e) => ({ ...e }));

function renderRows() {
  const body = document.getElementById("rows");
  body.innerHTML = "";
  for (const e of state) {
    const tr = document.createElement("tr");
    tr.dataset.id = e.id;
    tr.innerHTML = `<td>${e.item}</td><td>${e.category}</td><td class="note">${e.note}</td>
      <td class="num"><input type="number" step="0.01" min="0" aria-label="Amount for ${e.item}"
        value="${e.amount.toFixed(2)}"></td>`;
    tr.querySelector("input").addEventListener("input", (ev) => {
      e.amount = Number.parseFloat(ev.target.value) || 0;
      renderSummary();
    });
    body.appendChild(tr);
  }
}

function renderSummary() {
  const totals = {};
  for (const e of state) totals[e.category] = (totals[e.category] || 0) + e.amount;
  document.getElementById("subtotals").innerHTML = Object.entries(totals)
    .map(([c, v]) => `<dt>${c}</dt><dd data-category="${c}">${money(v)}</dd>`)
    .join("");
  const total = state.reduce((s, e) => s + e.amount, 0);
  document.getElementById("total").textContent = money(total);
  document.getElementById("flags").innerHTML = Object.entries(totals)
    .filter(([c, v]) => budgets[c] !== undefined && v > budgets[c] + 1e-9)
    .map(([c, v]) => `<li>${c} over budget by ${money(v - budgets[c])}</li>`)
    .join("");
}

renderRows();
renderSummary();
