import CodeBlock from "../components/CodeBlock.jsx";
import usePageTitle from "../hooks/usePageTitle.js";

const commands = [
  {
    name: "pipewright init",
    usage: "pipewright init",
    text: "Creates a starter pipewright.config.json in the current directory. Refuses to overwrite an existing one.",
  },
  {
    name: "pipewright run",
    usage: "pipewright run <pipeline> [--force] [--dry-run]",
    text: "Runs a pipeline and everything it depends on. --force ignores the cache; --dry-run prints the plan without running anything.",
  },
  {
    name: "pipewright watch",
    usage: "pipewright watch <pipeline>",
    text: "Runs the pipeline, then re-runs the affected steps whenever one of their inputs changes.",
  },
  {
    name: "pipewright graph",
    usage: "pipewright graph [--format dot|mermaid]",
    text: "Prints the dependency graph of all pipelines.",
  },
  {
    name: "pipewright cache clean",
    usage: "pipewright cache clean",
    text: "Deletes every cached step result.",
  },
];

export default function CliPage() {
  usePageTitle("CLI reference");
  return (
    <>
      <h1>CLI reference</h1>
      <p className="lead">
        Run the CLI through your package manager, e.g. <code>npx pipewright run build</code>. Every command accepts{" "}
        <code>--help</code>.
      </p>
      {commands.map((c) => (
        <section className="command" key={c.name}>
          <h2>
            <code>{c.name}</code>
          </h2>
          <CodeBlock>{c.usage}</CodeBlock>
          <p>{c.text}</p>
        </section>
      ))}
    </>
  );
}
