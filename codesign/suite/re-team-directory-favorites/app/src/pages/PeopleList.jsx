import PersonCard from "../components/PersonCard.jsx";
import { people } from "../data/people.js";

export default function PeopleList() {
  return (
    <section>
      <h1>People</h1>
      <div className="card-grid">
        {people.map((person) => (
          <PersonCard key={person.id} person={person} />
        ))}
      </div>
    </section>
  );
}
