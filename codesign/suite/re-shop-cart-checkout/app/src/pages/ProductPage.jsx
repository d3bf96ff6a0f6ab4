import { Link, useParams } from "react-router-dom";
import BagArt from "../components/BagArt.jsx";
import { findProduct, formatPrice } from "../data/products.js";
import NotFound from "./NotFound.jsx";

export default function ProductPage() {
  const { slug } = useParams();
  const product = findProduct(slug);
  if (!product) {
    return <NotFound />;
  }
  return (
    <article className="product-detail" data-slug={product.slug}>
      <Link to="/" className="back-link">
        ← All coffees
      </Link>
      <div className="detail-grid">
        <BagArt product={product} size="large" />
        <div className="detail-info">
          <p className="roast-badge">{product.roast} roast</p>
          <h1>{product.name}</h1>
          <p className="detail-price">
            <span className="product-price">{formatPrice(product.price)}</span>
            <span className="product-weight"> / {product.weight} bag</span>
          </p>
          <p className="detail-description">{product.description}</p>
          <h2>Tasting notes</h2>
          <ul className="note-list">
            {product.notes.map((note) => (
              <li key={note}>{note}</li>
            ))}
          </ul>
          <dl className="detail-facts">
            <dt>Origin</dt>
            <dd>{product.origin}</dd>
            <dt>Region</dt>
            <dd>{product.region}</dd>
            <dt>Process</dt>
            <dd>{product.process}</dd>
            <dt>Roast</dt>
            <dd>{product.roast}</dd>
          </dl>
        </div>
      </div>
    </article>
  );
}
