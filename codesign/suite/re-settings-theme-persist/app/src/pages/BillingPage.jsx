import { billing } from "../data/account.js";

export default function BillingPage() {
  return (
    <>
      <h1>Billing</h1>
      <div className="grid">
        <section className="panel plan">
          <h2>Current plan</h2>
          <p className="plan-name">{billing.plan}</p>
          <p className="plan-price">{billing.price}</p>
          <p className="muted">
            {billing.seats} seats · renews {billing.renews}
          </p>
        </section>
        <section className="panel">
          <h2>Payment method</h2>
          <p className="card-line">{billing.card}</p>
          <p className="muted">Expires {billing.cardExpiry}</p>
          <button type="button" className="secondary">
            Update card
          </button>
        </section>
        <section className="panel wide">
          <h2>Invoices</h2>
          <div className="table-scroll">
            <table className="invoices">
              <thead>
                <tr>
                  <th>Invoice</th>
                  <th>Date</th>
                  <th className="num">Amount</th>
                  <th>Status</th>
                </tr>
              </thead>
              <tbody>
                {billing.invoices.map((inv) => (
                  <tr key={inv.id}>
                    <td>{inv.id}</td>
                    <td>{inv.date}</td>
                    <td className="num">{inv.amount}</td>
                    <td>
                      <span className={inv.status === "Paid" ? "badge paid" : "badge"}>{inv.status}</span>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      </div>
    </>
  );
}
