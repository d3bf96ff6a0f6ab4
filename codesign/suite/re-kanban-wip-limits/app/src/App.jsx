import Board from "./components/Board.jsx";
import BoardHeader from "./components/BoardHeader.jsx";

export default function App() {
  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Sprintboard</span>
        <nav aria-label="Workspace" className="topnav">
          <a href="/" aria-current="page">
            Board
          </a>
          <span className="topnav-muted">Backlog</span>
          <span className="topnav-muted">Reports</span>
        </nav>
      </header>
      <main className="page">
        <BoardHeader />
        <Board />
      </main>
    </div>
  );
}
