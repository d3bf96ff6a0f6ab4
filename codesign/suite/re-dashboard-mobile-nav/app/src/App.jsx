import { Route, Routes } from "react-router-dom";
import Sidebar from "./components/Sidebar.jsx";
import Topbar from "./components/Topbar.jsx";
import Customers from "./pages/Customers.jsx";
import Integrations from "./pages/Integrations.jsx";
import Overview from "./pages/Overview.jsx";
import Reports from "./pages/Reports.jsx";
import Settings from "./pages/Settings.jsx";

export default function App() {
  return (
    <div className="shell">
      <Sidebar />
      <div className="workspace">
        <Topbar />
        <main className="content">
          <Routes>
            <Route path="/" element={<Overview />} />
            <Route path="/reports" element={<Reports />} />
            <Route path="/customers" element={<Customers />} />
            <Route path="/integrations" element={<Integrations />} />
            <Route path="/settings" element={<Settings />} />
            <Route path="*" element={<p className="muted">This page does not exist.</p>} />
          </Routes>
        </main>
      </div>
    </div>
  );
}
