import { customers } from "../data/customers.js";

const statusClass = { Active: "pill ok", "At risk": "pill warn", Churned: "pill off" };

export default function Customers() {
  return (
    <>
      <div className="page-head">
        <h1>Customers</h1>
        <p className="muted">{customers.length} customers with an order in the last 90 days</p>
      </div>
      <section className="panel">
        <div className="table-wrap">
          <table className="customers">
            <thead>
              <tr>
                <th>Customer</th>
                <th>Segment</th>
                <th className="num">Orders</th>
                <th className="num">Lifetime value</th>
                <th>Last order</th>
                <th>Status</th>
              </tr>
            </thead>
            <tbody>
              {customers.map((c) => (
                <tr key={c.id} data-id={c.id}>
                  <td>{c.name}</td>
                  <td>{c.segment}</td>
                  <td className="num">{c.orders}</td>
                  <td className="num">{c.ltv}</td>
                  <td>{c.lastOrder}</td>
                  <td>
                    <span className={statusClass[c.status]}>{c.status}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}
