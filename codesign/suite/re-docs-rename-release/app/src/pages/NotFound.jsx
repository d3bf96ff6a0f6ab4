import { Link } from "react-router-dom";
import usePageTitle from "../hooks/usePageTitle.js";

export default function NotFound() {
  usePageTitle("Not found");
  return (
    <div className="not-found">
      <h1>Page not found</h1>
      <p>
        This page doesn't exist. Try the <Link to="/docs/install">installation guide</Link>.
      </p>
    </div>
  );
}
