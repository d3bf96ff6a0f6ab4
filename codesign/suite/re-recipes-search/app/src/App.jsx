import { Link, Route, Routes } from "react-router-dom";
import HomePage from "./pages/HomePage.jsx";
import RecipePage from "./pages/RecipePage.jsx";

export default function App() {
  return (
    <div className="layout">
      <header className="site-header">
        <Link to="/" className="brand">
          <span className="brand-dot" aria-hidden="true" />
          Saltbox Kitchen
        </Link>
        <span className="tagline">Home cooking, written down properly</span>
      </header>
      <main className="content">
        <Routes>
          <Route path="/" element={<HomePage />} />
          <Route path="/recipes/:id" element={<RecipePage />} />
          <Route path="*" element={<p className="empty">Page not found.</p>} />
        </Routes>
      </main>
      <footer className="site-footer">Saltbox Kitchen · recipes by Hana &amp; Will · oven temperatures are for fan ovens</footer>
    </div>
  );
}
