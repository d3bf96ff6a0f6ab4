import { reports } from "../data/reports.js";

export default function Reports() {
  return (
    <>
      <div className="page-head">
        <h1>Reports</h1>
        <button type="button" className="btn-primary">New report</button>
      </div>
      <ul className="report-list">
        {reports.map((r) => (
          <li key={r.id} className="panel report">
            <div>
              <h2>{r.name}</h2>
              <p className="muted">
                {r.schedule} · {r.format}
              </p>
            </div>
            <span className="owner">Owner: {r.owner}</span>
          </li>
        ))}
      </ul>
    </>
  );
}
