import { Link } from "react-router-dom";

export default function NotFound() {
  return (
    <section className="not-found">
      <h1>Page not found</h1>
      <p>
        That page has been ground down to nothing. <Link to="/">Back to the shop</Link>
      </p>
    </section>
  );
}
