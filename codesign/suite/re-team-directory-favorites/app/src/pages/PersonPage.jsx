import { Link, useParams } from "react-router-dom";
import { findPerson } from "../data/people.js";

export default function PersonPage() {
  const { id } = useParams();
  const person = findPerson(id);
  if (!person) {
    return <p className="empty">No one with that id.</p>;
  }
  return (
    <section className="profile">
      <Link to="/">← All people</Link>
      <h1>{person.name}</h1>
      <p className="person-role">{person.role}</p>
      <dl>
        <dt>Team</dt>
        <dd>{person.team}</dd>
        <dt>City</dt>
        <dd>{person.city}</dd>
      </dl>
    </section>
  );
}
