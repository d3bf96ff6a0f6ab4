import { NavLink } from "react-router-dom";
import { navItems, workspace } from "../data/navigation.js";
import Icon from "./Icon.jsx";

export default function Sidebar() {
  return (
    <aside className="sidebar">
      <div className="sidebar-brand">
        <span className="logo-mark" aria-hidden="true">P</span>
        <span>Pulse</span>
      </div>
      <nav className="sidebar-nav" aria-label="Main">
        {navItems.map((item) => (
          <NavLink key={item.to} to={item.to} end={item.to === "/"} className="nav-item">
            <Icon name={item.icon} />
            {item.label}
          </NavLink>
        ))}
      </nav>
      <div className="sidebar-footer">
        <strong>{workspace.name}</strong>
        <span>{workspace.plan}</span>
      </div>
    </aside>
  );
}
