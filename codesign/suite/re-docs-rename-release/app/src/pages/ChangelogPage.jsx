import InlineCode from "../components/InlineCode.jsx";
import { releases } from "../data/changelog.js";
import usePageTitle from "../hooks/usePageTitle.js";

export default function ChangelogPage() {
  usePageTitle("Changelog");
  return (
    <div className="changelog">
      <h1>Changelog</h1>
      <p className="lead">All notable changes to Pipewright. Versions follow semantic versioning.</p>
      {releases.map((r) => (
        <section className="release" key={r.version} data-version={r.version} id={`v${r.version.replaceAll(".", "-")}`}>
          <h2>
            {r.version} <time dateTime={r.date}>{r.date}</time>
          </h2>
          <ul>
            {r.changes.map((c) => (
              <li key={c}>
                <InlineCode text={c} />
              </li>
            ))}
          </ul>
        </section>
      ))}
    </div>
  );
}
