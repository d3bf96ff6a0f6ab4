export default function RevenueChart({ weeks }) {
  const max = Math.max(...weeks.map((w) => w.revenue));
  return (
    <section className="panel">
      <div className="panel-head">
        <h2>Revenue by week</h2>
        <span className="muted">USD</span>
      </div>
      <div className="chart" role="img" aria-label="Weekly revenue, last 8 weeks">
        {weeks.map((w) => (
          <div className="bar-col" key={w.label}>
            <span className="bar-value">${(w.revenue / 1000).toFixed(1)}k</span>
            <div className="bar" style={{ height: `${Math.round((w.revenue / max) * 100)}%` }} />
            <span className="bar-label">{w.label}</span>
          </div>
        ))}
      </div>
    </section>
  );
}
