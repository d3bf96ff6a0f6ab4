import { Link } from "react-router-dom";

export default function PersonCard({ person }) {
  return (
    <article className="person-card" data-id={person.id}>
      <div className="avatar" aria-hidden="true">
        {person.name
          .split(" ")
          .map((part) => part[0])
          .join("")}
      </div>
      <div className="person-info">
        <h2 className="person-name">
          <Link to={`/people/${person.id}`}>{person.name}</Link>
        </h2>
        <p className="person-role">{person.role}</p>
        <p className="person-team">
          {person.team} · {person.city}
        </p>
      </div>
    </article>
  );
}
