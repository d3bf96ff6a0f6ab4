import { NavLink } from "react-router-dom";
import { useProfile } from "../state/ProfileContext.jsx";
import Initials from "./Initials.jsx";

export default function TopBar() {
  const { profile } = useProfile();
  return (
    <header className="topbar">
      <div className="topbar-inner">
        <span className="brand">
          <span className="brand-mark" aria-hidden="true">D</span>
          Driftwood
        </span>
        <nav className="tabs" aria-label="Account">
          <NavLink to="/" end>
            Profile
          </NavLink>
          <NavLink to="/settings">Settings</NavLink>
          <NavLink to="/billing">Billing</NavLink>
        </nav>
        <span className="topbar-user">
          <Initials name={profile.name} />
        </span>
      </div>
    </header>
  );
}
