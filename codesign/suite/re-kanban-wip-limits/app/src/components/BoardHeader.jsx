import { members, sprint } from "../data/board.js";
import { useBoard } from "../state/BoardContext.jsx";
import Avatar from "./Avatar.jsx";

export default function BoardHeader() {
  const { cards, cardsIn } = useBoard();
  const done = cardsIn("done").length;
  return (
    <div className="board-header">
      <div>
        <h1>
          {sprint.team} · {sprint.name}
        </h1>
        <p className="muted">
          {sprint.dates} · Goal: {sprint.goal}
        </p>
      </div>
      <div className="board-summary">
        <div className="team" aria-label="Team members">
          {members.map((m) => (
            <Avatar key={m.id} name={m.name} />
          ))}
        </div>
        <p className="progress">
          {done} of {cards.length} cards done
        </p>
      </div>
    </div>
  );
}
