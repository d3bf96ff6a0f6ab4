import { Link } from "react-router-dom";
import { formatDuration, formatPrice } from "../data/services.js";

export default function ServiceCard({ service }) {
  return (
    <article className="service-card" data-id={service.id}>
      <h2>{service.name}</h2>
      <p className="service-meta">
        <span className="duration">{formatDuration(service.duration)}</span>
        <span aria-hidden="true"> · </span>
        <span className="price">{formatPrice(service.price)}</span>
      </p>
      <p className="service-summary">{service.summary}</p>
      <Link className="service-book" to="/book">
        Book {service.name.toLowerCase()}
      </Link>
    </article>
  );
}
