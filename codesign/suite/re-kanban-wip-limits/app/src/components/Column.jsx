import AddCardForm from "./AddCardForm.jsx";
import Card from "./Card.jsx";

export default function Column({ column, cards }) {
  const headingId = `col-${column.id}`;
  return (
    <section className="column" data-column={column.id} aria-labelledby={headingId}>
      <header className="column-header">
        <h2 id={headingId}>{column.title}</h2>
        <span className="column-count">{cards.length}</span>
      </header>
      {cards.length === 0 ? (
        <p className="column-empty">No cards</p>
      ) : (
        <ul className="card-list">
          {cards.map((card) => (
            <li key={card.id}>
              <Card card={card} />
            </li>
          ))}
        </ul>
      )}
      {column.id === "todo" && <AddCardForm />}
    </section>
  );
}
