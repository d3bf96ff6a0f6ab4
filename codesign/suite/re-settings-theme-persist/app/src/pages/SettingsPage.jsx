import { useState } from "react";
import { languages, timezones } from "../data/account.js";
import { useProfile } from "../state/ProfileContext.jsx";

export default function SettingsPage() {
  const { profile, saveProfile } = useProfile();
  const [draft, setDraft] = useState(profile);
  const [saved, setSaved] = useState(false);
  const update = (field, value) => {
    setDraft((d) => ({ ...d, [field]: value }));
    setSaved(false);
  };
  const toggleNotification = (key) => {
    setDraft((d) => ({ ...d, notifications: { ...d.notifications, [key]: !d.notifications[key] } }));
    setSaved(false);
  };
  return (
    <>
      <h1>Settings</h1>
      <form
        className="settings"
        onSubmit={(e) => {
          e.preventDefault();
          saveProfile(draft);
          setSaved(true);
        }}
      >
        <section className="panel">
          <h2>Account</h2>
          <div className="fields">
            <label>
              Full name
              <input value={draft.name} onChange={(e) => update("name", e.target.value)} required />
            </label>
            <label>
              Email
              <input type="email" value={draft.email} onChange={(e) => update("email", e.target.value)} required />
            </label>
            <label>
              Language
              <select value={draft.language} onChange={(e) => update("language", e.target.value)}>
                {languages.map((l) => (
                  <option key={l.value} value={l.value}>
                    {l.label}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Time zone
              <select value={draft.timezone} onChange={(e) => update("timezone", e.target.value)}>
                {timezones.map((tz) => (
                  <option key={tz}>{tz}</option>
                ))}
              </select>
            </label>
          </div>
        </section>
        <section className="panel">
          <h2>Email notifications</h2>
          <label className="check">
            <input type="checkbox" checked={draft.notifications.summary} onChange={() => toggleNotification("summary")} />
            Weekly summary of workspace activity
          </label>
          <label className="check">
            <input type="checkbox" checked={draft.notifications.mentions} onChange={() => toggleNotification("mentions")} />
            Comments and mentions
          </label>
          <label className="check">
            <input type="checkbox" checked={draft.notifications.product} onChange={() => toggleNotification("product")} />
            Product news and tips
          </label>
        </section>
        <div className="actions">
          <button type="submit" className="primary">
            Save changes
          </button>
          {saved && (
            <span className="saved" role="status">
              Changes saved
            </span>
          )}
        </div>
      </form>
    </>
  );
}
