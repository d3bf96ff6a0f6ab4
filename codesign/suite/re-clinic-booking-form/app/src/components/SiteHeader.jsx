import { Link, NavLink } from "react-router-dom";
import { CLINIC } from "../config.js";

export default function SiteHeader() {
  return (
    <header className="site-header">
      <div className="site-header-inner">
        <Link to="/" className="brand">
          <svg className="brand-logo" viewBox="0 0 32 32" aria-hidden="true">
            <path d="M4 22 L16 6 L28 22 L20 18 L16 26 L12 18 Z" fill="currentColor" />
          </svg>
          {CLINIC.name}
        </Link>
        <nav className="main-nav" aria-label="Main">
          <NavLink to="/" end>
            Home
          </NavLink>
          <NavLink to="/services">Services &amp; prices</NavLink>
          <NavLink to="/book" className="nav-cta">
            Book now
          </NavLink>
        </nav>
      </div>
    </header>
  );
}
