import { Link } from "react-router-dom";
import CodeBlock from "../components/CodeBlock.jsx";
import usePageTitle from "../hooks/usePageTitle.js";

export default function InstallPage() {
  usePageTitle("Installation");
  return (
    <>
      <h1>Installation</h1>
      <p className="lead">
        Pipewright is a single dev dependency. It needs Node.js 20 or newer and works with npm, pnpm and Yarn
        workspaces.
      </p>
      <h2>Install the package</h2>
      <p>Add it to the root of your monorepo with the package manager you already use:</p>
      <CodeBlock label="npm">npm install --save-dev pipewright@2.4.0</CodeBlock>
      <CodeBlock label="pnpm">pnpm add -D pipewright@2.4.0</CodeBlock>
      <CodeBlock label="Yarn">yarn add -D pipewright@2.4.0</CodeBlock>
      <h2>Check the installation</h2>
      <p>The CLI prints its version:</p>
      <CodeBlock label="Terminal">
        {`$ npx pipewright --version
2.4.0`}
      </CodeBlock>
      <h2>Create a config file</h2>
      <p>
        <code>npx pipewright init</code> writes a starter <code>pipewright.config.json</code> with a{" "}
        <code>build</code> and a <code>test</code> pipeline that you can edit.
      </p>
      <p className="next-link">
        <Link to="/docs/config">Next: Configuration →</Link>
      </p>
    </>
  );
}
