import { columns, memberName } from "../data/board.js";
import { useBoard } from "../state/BoardContext.jsx";
import Avatar from "./Avatar.jsx";

export default function Card({ card }) {
  const { moveCard } = useBoard();
  const assignee = memberName(card.assignee);
  const selectId = `move-${card.id}`;
  return (
    <article className="card" data-id={card.id}>
      <div className="card-top">
        <span className="card-key">{card.id}</span>
        <span className={`tag tag-${card.tag.toLowerCase()}`}>{card.tag}</span>
      </div>
      <h3 className="card-title">{card.title}</h3>
      <div className="card-bottom">
        <span className="assignee">
          <Avatar name={assignee} small />
          {assignee}
        </span>
        <span className="move">
          <label htmlFor={selectId}>Move to</label>
          <select id={selectId} value={card.column} onChange={(e) => moveCard(card.id, e.target.value)}>
            {columns.map((c) => (
              <option key={c.id} value={c.id}>
                {c.title}
              </option>
            ))}
          </select>
        </span>
      </div>
    </article>
  );
}
