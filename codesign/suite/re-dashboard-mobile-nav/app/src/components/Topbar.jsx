import Icon from "./Icon.jsx";

export default function Topbar() {
  return (
    <header className="topbar">
      <label className="search">
        <Icon name="search" size={16} />
        <input type="search" placeholder="Search reports, customers…" aria-label="Search" />
      </label>
      <select className="range" aria-label="Date range" defaultValue="30d">
        <option value="7d">Last 7 days</option>
        <option value="30d">Last 30 days</option>
        <option value="qtd">Quarter to date</option>
        <option value="ytd">Year to date</option>
      </select>
      <div className="user">
        <span className="avatar" aria-hidden="true">JM</span>
        <span className="user-name">Jordan Miles</span>
      </div>
    </header>
  );
}
