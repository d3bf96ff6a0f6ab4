import { useState } from "react";
import { workspace } from "../data/navigation.js";

export default function Settings() {
  const [saved, setSaved] = useState(false);
  return (
    <>
      <div className="page-head">
        <h1>Settings</h1>
      </div>
      <form
        className="panel settings-form"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(true);
        }}
        onChange={() => setSaved(false)}
      >
        <label>
          Workspace name
          <input name="workspace" defaultValue={workspace.name} />
        </label>
        <label>
          Reporting currency
          <select name="currency" defaultValue="USD">
            <option value="USD">US dollar (USD)</option>
            <option value="EUR">Euro (EUR)</option>
            <option value="GBP">Pound sterling (GBP)</option>
          </select>
        </label>
        <label>
          Fiscal year starts
          <select name="fiscal" defaultValue="jan">
            <option value="jan">January</option>
            <option value="apr">April</option>
            <option value="jul">July</option>
          </select>
        </label>
        <label className="check">
          <input type="checkbox" name="digest" defaultChecked />
          Email me a weekly digest every Monday
        </label>
        <div className="form-actions">
          <button type="submit" className="btn-primary">
            Save changes
          </button>
          {saved && <span className="muted">Settings saved.</span>}
        </div>
      </form>
    </>
  );
}
