import { Link, NavLink } from "react-router-dom";

export default function Header() {
  return (
    <header className="site-header">
      <div className="header-inner">
        <Link to="/" className="brand" aria-label="Larkspur Coffee Roasters home">
          <span className="brand-mark" aria-hidden="true">
            ✶
          </span>
          Larkspur<span className="brand-sub"> Coffee Roasters</span>
        </Link>
        <nav className="main-nav" aria-label="Main">
          <NavLink to="/" end>
            Shop
          </NavLink>
          <NavLink to="/about">About</NavLink>
        </nav>
      </div>
    </header>
  );
}
