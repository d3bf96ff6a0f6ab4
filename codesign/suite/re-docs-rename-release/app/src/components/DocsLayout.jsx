import { NavLink, Outlet } from "react-router-dom";

const pages = [
  { to: "/docs/install", label: "Installation" },
  { to: "/docs/config", label: "Configuration" },
  { to: "/docs/cli", label: "CLI reference" },
];

export default function DocsLayout() {
  return (
    <div className="docs-layout">
      <nav className="docs-nav" aria-label="Documentation">
        <p className="docs-nav-title">Guides</p>
        {pages.map((p) => (
          <NavLink key={p.to} to={p.to}>
            {p.label}
          </NavLink>
        ))}
      </nav>
      <article className="doc">
        <Outlet />
      </article>
    </div>
  );
}
