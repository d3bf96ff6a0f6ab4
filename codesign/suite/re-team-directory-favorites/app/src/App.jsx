import { NavLink, Route, Routes } from "react-router-dom";
import PeopleList from "./pages/PeopleList.jsx";
import PersonPage from "./pages/PersonPage.jsx";

export default function App() {
  return (
    <div className="layout">
      <header className="topbar">
        <span className="brand">Northwind</span>
        <nav className="main-nav" aria-label="Main">
          <NavLink to="/" end>
            People
          </NavLink>
        </nav>
      </header>
      <main className="content">
        <Routes>
          <Route path="/" element={<PeopleList />} />
          <Route path="/people/:id" element={<PersonPage />} />
          <Route path="*" element={<p className="empty">Page not found.</p>} />
        </Routes>
      </main>
    </div>
  );
}
