import { integrations } from "../data/reports.js";

export default function Integrations() {
  return (
    <>
      <div className="page-head">
        <h1>Integrations</h1>
        <p className="muted">Data sources feeding your dashboards</p>
      </div>
      <div className="integration-grid">
        {integrations.map((i) => (
          <article key={i.id} className="panel integration">
            <h2>{i.name}</h2>
            <p className="muted">{i.detail}</p>
            {i.connected ? (
              <span className="pill ok">Connected</span>
            ) : (
              <button type="button" className="btn-secondary">
                Connect
              </button>
            )}
          </article>
        ))}
      </div>
    </>
  );
}
