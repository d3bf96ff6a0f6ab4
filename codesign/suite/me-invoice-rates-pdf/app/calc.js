// Pure invoice arithmetic and formatting, shared by the renderer.

const round2 = (n) => Math.round((n + Number.EPSILON) * 100) / 100;

export function lineAmount(line) {
  return round2(line.hours * line.rate);
}

export function totals(lines, discountRate, vatRate) {
  const subtotal = round2(lines.reduce((sum, l) => sum + lineAmount(l), 0));
  const discount = round2(subtotal * discountRate);
  const net = round2(subtotal - discount);
  const vat = round2(net * vatRate);
  const hours = lines.reduce((sum, l) => sum + l.hours, 0);
  return { subtotal, discount, net, vat, total: round2(net + vat), hours };
}

const eur = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

export function money(n) {
  return `€${eur.format(n)}`;
}

export function percent(rate) {
  return `${Math.round(rate * 1000) / 10}%`;
}

export function hoursLabel(h) {
  return `${Number.isInteger(h) ? h : h.toFixed(1)} ${h === 1 ? "hour" : "hours"}`;
}
