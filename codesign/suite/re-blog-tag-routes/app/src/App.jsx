import { Link, NavLink, Route, Routes } from "react-router-dom";
import HomePage from "./pages/HomePage.jsx";
import NotFound from "./pages/NotFound.jsx";
import PostPage from "./pages/PostPage.jsx";

export default function App() {
  return (
    <div className="layout">
      <header className="site-header">
        <div className="site-header-inner">
          <Link className="brand" to="/">
            <span className="brand-mark" aria-hidden="true">◆</span> Heron <span className="brand-sub">Engineering</span>
          </Link>
          <nav className="main-nav" aria-label="Main">
            <NavLink to="/" end>
              Posts
            </NavLink>
          </nav>
        </div>
      </header>
      <main className="content">
        <Routes>
          <Route path="/" element={<HomePage />} />
          <Route path="/posts/:slug" element={<PostPage />} />
          <Route path="*" element={<NotFound />} />
        </Routes>
      </main>
      <footer className="site-footer">
        <p>© 2025 Heron Freight Technologies. Views are the authors' own.</p>
      </footer>
    </div>
  );
}
