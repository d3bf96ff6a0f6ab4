import Initials from "../components/Initials.jsx";
import { activity, workspace } from "../data/account.js";
import { useProfile } from "../state/ProfileContext.jsx";

export default function ProfilePage() {
  const { profile } = useProfile();
  const storagePct = Math.round((workspace.storageUsedGb / workspace.storageTotalGb) * 100);
  return (
    <>
      <h1>Profile</h1>
      <div className="grid">
        <section className="panel profile-card">
          <Initials name={profile.name} large />
          <div>
            <h2 className="profile-name">{profile.name}</h2>
            <p className="muted">{profile.email}</p>
            <p className="muted">
              {workspace.role} · {workspace.name} · Member since {workspace.memberSince}
            </p>
          </div>
        </section>
        <section className="panel">
          <h2>Workspace</h2>
          <dl className="stats">
            <div>
              <dt>Notebooks</dt>
              <dd>{workspace.notebooks}</dd>
            </div>
            <div>
              <dt>Shared with</dt>
              <dd>{workspace.sharedWith} people</dd>
            </div>
            <div>
              <dt>Storage</dt>
              <dd>
                {workspace.storageUsedGb} GB of {workspace.storageTotalGb} GB
              </dd>
            </div>
          </dl>
          <div className="meter" aria-hidden="true">
            <span style={{ width: `${storagePct}%` }} />
          </div>
        </section>
        <section className="panel wide">
          <h2>Recent activity</h2>
          <ul className="activity">
            {activity.map((a) => (
              <li key={a.id}>
                <span>{a.what}</span>
                <span className="muted">{a.when}</span>
              </li>
            ))}
          </ul>
        </section>
      </div>
    </>
  );
}
