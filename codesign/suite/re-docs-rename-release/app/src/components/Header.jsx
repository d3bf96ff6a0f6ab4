import { Link, NavLink } from "react-router-dom";
import { PRODUCT_NAME, VERSION } from "../site.js";

export default function Header() {
  return (
    <header className="site-header">
      <div className="header-inner">
        <Link to="/" className="logo" aria-label="Pipewright home">
          <svg width="26" height="26" viewBox="0 0 26 26" aria-hidden="true">
            <rect x="1" y="1" width="24" height="24" rx="6" fill="#0f766e" />
            <path d="M6 9h8a3 3 0 0 1 0 6H9a3 3 0 0 0 0 6h11" stroke="#ccfbf1" strokeWidth="2.4" fill="none" />
          </svg>
          <span className="logo-text">{PRODUCT_NAME}</span>
        </Link>
        <span className="version-badge">v{VERSION}</span>
        <nav className="top-nav" aria-label="Main">
          <NavLink to="/docs/install">Docs</NavLink>
          <NavLink to="/changelog">Changelog</NavLink>
        </nav>
      </div>
    </header>
  );
}
