export default function StatCard({ label, value, change, good }) {
  return (
    <article className="stat-card">
      <p className="stat-label">{label}</p>
      <p className="stat-value">{value}</p>
      <p className={good ? "stat-change up" : "stat-change down"}>{change} vs previous 30 days</p>
    </article>
  );
}
