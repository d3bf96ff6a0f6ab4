import { useState } from "react";
import { members, tags } from "../data/board.js";
import { useBoard } from "../state/BoardContext.jsx";

export default function AddCardForm() {
  const { addCard } = useBoard();
  const [title, setTitle] = useState("");
  const [assignee, setAssignee] = useState(members[0].id);
  const [tag, setTag] = useState(tags[0]);
  return (
    <form
      className="add-card"
      onSubmit={(e) => {
        e.preventDefault();
        if (!title.trim()) return;
        addCard({ title: title.trim(), assignee, tag });
        setTitle("");
      }}
    >
      <label className="visually-hidden" htmlFor="new-card-title">
        New card title
      </label>
      <input
        id="new-card-title"
        value={title}
        onChange={(e) => setTitle(e.target.value)}
        placeholder="Add a card…"
      />
      <div className="add-card-row">
        <select aria-label="Assignee" value={assignee} onChange={(e) => setAssignee(e.target.value)}>
          {members.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name}
            </option>
          ))}
        </select>
        <select aria-label="Tag" value={tag} onChange={(e) => setTag(e.target.value)}>
          {tags.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
        <button type="submit">Add</button>
      </div>
    </form>
  );
}
