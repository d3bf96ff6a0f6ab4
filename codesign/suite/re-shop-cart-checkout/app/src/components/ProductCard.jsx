import { Link } from "react-router-dom";
import { formatPrice } from "../data/products.js";
import BagArt from "./BagArt.jsx";

export default function ProductCard({ product }) {
  return (
    <article className="product-card" data-slug={product.slug}>
      <BagArt product={product} />
      <div className="product-body">
        <p className="roast-badge">{product.roast} roast</p>
        <h2 className="product-name">
          <Link to={`/products/${product.slug}`}>{product.name}</Link>
        </h2>
        <p className="product-origin">
          {product.origin} · {product.process}
        </p>
        <p className="product-notes">{product.notes.join(", ")}</p>
        <p className="product-meta">
          <span className="product-price">{formatPrice(product.price)}</span>
          <span className="product-weight">{product.weight}</span>
        </p>
      </div>
    </article>
  );
}
