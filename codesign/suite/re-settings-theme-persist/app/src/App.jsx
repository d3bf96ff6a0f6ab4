import { Route, Routes } from "react-router-dom";
import TopBar from "./components/TopBar.jsx";
import BillingPage from "./pages/BillingPage.jsx";
import ProfilePage from "./pages/ProfilePage.jsx";
import SettingsPage from "./pages/SettingsPage.jsx";

export default function App() {
  return (
    <>
      <TopBar />
      <main className="page">
        <Routes>
          <Route path="/" element={<ProfilePage />} />
          <Route path="/settings" element={<SettingsPage />} />
          <Route path="/billing" element={<BillingPage />} />
          <Route path="*" element={<p className="muted">Page not found.</p>} />
        </Routes>
      </main>
    </>
  );
}
