import { Route, Routes } from "react-router-dom";
import SiteFooter from "./components/SiteFooter.jsx";
import SiteHeader from "./components/SiteHeader.jsx";
import BookPage from "./pages/BookPage.jsx";
import HomePage from "./pages/HomePage.jsx";
import ServicesPage from "./pages/ServicesPage.jsx";

export default function App() {
  return (
    <div className="layout">
      <SiteHeader />
      <main className="content">
        <Routes>
          <Route path="/" element={<HomePage />} />
          <Route path="/services" element={<ServicesPage />} />
          <Route path="/book" element={<BookPage />} />
          <Route path="*" element={<p className="lede">Sorry, we couldn't find that page.</p>} />
        </Routes>
      </main>
      <SiteFooter />
    </div>
  );
}
