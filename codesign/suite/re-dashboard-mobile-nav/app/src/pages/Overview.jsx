import RevenueChart from "../components/RevenueChart.jsx";
import StatCard from "../components/StatCard.jsx";
import { kpis, topProducts, weeklyRevenue } from "../data/metrics.js";

export default function Overview() {
  return (
    <>
      <div className="page-head">
        <h1>Overview</h1>
        <p className="muted">Fernhill Coffee Co. · Aug 26 – Sep 24</p>
      </div>
      <div className="stat-grid">
        {kpis.map((k) => (
          <StatCard key={k.label} {...k} />
        ))}
      </div>
      <div className="two-col">
        <RevenueChart weeks={weeklyRevenue} />
        <section className="panel">
          <div className="panel-head">
            <h2>Top products</h2>
          </div>
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Product</th>
                  <th className="num">Units</th>
                  <th className="num">Revenue</th>
                </tr>
              </thead>
              <tbody>
                {topProducts.map((p) => (
                  <tr key={p.name}>
                    <td>{p.name}</td>
                    <td className="num">{p.units}</td>
                    <td className="num">{p.revenue}</td>
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
