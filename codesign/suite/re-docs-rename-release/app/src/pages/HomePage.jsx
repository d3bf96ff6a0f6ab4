import { Link } from "react-router-dom";
import CodeBlock from "../components/CodeBlock.jsx";
import usePageTitle from "../hooks/usePageTitle.js";

const features = [
  {
    title: "Incremental by default",
    text: "Pipewright hashes the inputs of every step and skips work whose inputs haven't changed since the last run.",
  },
  {
    title: "Graph-aware",
    text: "Steps say what they depend on; Pipewright works out the order and runs independent steps side by side.",
  },
  {
    title: "One config file",
    text: "Everything lives in pipewright.config.json at the root of the repository. No plugins, no glue scripts.",
  },
];

export default function HomePage() {
  usePageTitle(null);
  return (
    <div className="home">
      <section className="hero">
        <h1>Pipewright</h1>
        <p className="tagline">
          Declarative build pipelines for JavaScript monorepos. Describe what depends on what once, and Pipewright
          runs only what changed — in parallel, with a shared cache.
        </p>
        <div className="hero-actions">
          <Link className="button primary" to="/docs/install">
            Get started
          </Link>
          <Link className="button" to="/changelog">
            What's new in 2.4
          </Link>
        </div>
      </section>
      <section className="quick-start">
        <h2>Quick start</h2>
        <CodeBlock label="Terminal">
          {`npm install --save-dev pipewright@2.4.0
npx pipewright init
npx pipewright run build`}
        </CodeBlock>
      </section>
      <section className="features" aria-label="Features">
        {features.map((f) => (
          <div className="feature" key={f.title}>
            <h2>{f.title}</h2>
            <p>{f.text}</p>
          </div>
        ))}
      </section>
    </div>
  );
}
