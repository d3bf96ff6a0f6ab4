import CodeBlock from "../components/CodeBlock.jsx";
import InlineCode from "../components/InlineCode.jsx";
import { configOptions } from "../data/configOptions.js";
import usePageTitle from "../hooks/usePageTitle.js";

const envVars = [
  { name: "PIPEWRIGHT_CACHE_DIR", effect: "Overrides `cacheDir`." },
  { name: "PIPEWRIGHT_LOG_LEVEL", effect: "Overrides `logLevel`." },
  { name: "PIPEWRIGHT_NO_CACHE", effect: "Set to `1` to behave as if `cache` were `false`." },
];

export default function ConfigPage() {
  usePageTitle("Configuration");
  return (
    <>
      <h1>Configuration</h1>
      <p className="lead">
        Pipewright reads <code>pipewright.config.json</code> from the root of your repository. Paths in it are
        relative to that file.
      </p>
      <CodeBlock label="pipewright.config.json">
        {`{
  "$schema": "./node_modules/pipewright/schema.json",
  "concurrency": 4,
  "pipelines": {
    "build": {
      "steps": ["tsc -b", "vite build"],
      "inputs": ["src/**", "tsconfig.json"],
      "outputs": ["dist/**"]
    },
    "test": { "dependsOn": ["build"], "steps": ["vitest run"] }
  }
}`}
      </CodeBlock>
      <h2>Options</h2>
      <div className="table-wrap">
        <table className="options-table">
          <thead>
            <tr>
              <th scope="col">Option</th>
              <th scope="col">Type</th>
              <th scope="col">Default</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {configOptions.map((o) => (
              <tr key={o.name} data-option={o.name}>
                <td>
                  <code>{o.name}</code>
                </td>
                <td>
                  <code>{o.type}</code>
                </td>
                <td>
                  <code>{o.default}</code>
                </td>
                <td>
                  <InlineCode text={o.description} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Environment variables</h2>
      <p>Environment variables win over the config file, which is handy in CI:</p>
      <div className="table-wrap">
        <table className="env-table">
          <thead>
            <tr>
              <th scope="col">Variable</th>
              <th scope="col">Effect</th>
            </tr>
          </thead>
          <tbody>
            {envVars.map((v) => (
              <tr key={v.name}>
                <td>
                  <code>{v.name}</code>
                </td>
                <td>
                  <InlineCode text={v.effect} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
