import { Link } from "react-router-dom";

export default function NotFound() {
  return (
    <section className="not-found">
      <h1>Page not found</h1>
      <p>
        We couldn't find that page. <Link to="/">Back to all posts</Link>
      </p>
    </section>
  );
}
