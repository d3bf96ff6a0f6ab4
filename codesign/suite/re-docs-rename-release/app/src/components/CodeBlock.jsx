export default function CodeBlock({ label, children }) {
  return (
    <figure className="code-block">
      {label && <figcaption>{label}</figcaption>}
      <pre>
        <code>{children}</code>
      </pre>
    </figure>
  );
}
