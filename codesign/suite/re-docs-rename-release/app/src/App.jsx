import { Route, Routes } from "react-router-dom";
import DocsLayout from "./components/DocsLayout.jsx";
import Footer from "./components/Footer.jsx";
import Header from "./components/Header.jsx";
import ChangelogPage from "./pages/ChangelogPage.jsx";
import CliPage from "./pages/CliPage.jsx";
import ConfigPage from "./pages/ConfigPage.jsx";
import HomePage from "./pages/HomePage.jsx";
import InstallPage from "./pages/InstallPage.jsx";
import NotFound from "./pages/NotFound.jsx";

export default function App() {
  return (
    <div className="layout">
      <Header />
      <main className="content">
        <Routes>
          <Route path="/" element={<HomePage />} />
          <Route path="/docs" element={<DocsLayout />}>
            <Route path="install" element={<InstallPage />} />
            <Route path="config" element={<ConfigPage />} />
            <Route path="cli" element={<CliPage />} />
          </Route>
          <Route path="/changelog" element={<ChangelogPage />} />
          <Route path="*" element={<NotFound />} />
        </Routes>
      </main>
      <Footer />
    </div>
  );
}
