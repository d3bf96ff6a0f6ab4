import ProductCard from "../components/ProductCard.jsx";
import { products } from "../data/products.js";

export default function ShopPage() {
  return (
    <>
      <section className="hero">
        <h1>This week's coffees</h1>
        <p>
          Six coffees on the shelf, roasted on Tuesday and shipped in valve-sealed bags. Whole bean only — grind it
          fresh, it's worth it.
        </p>
      </section>
      <section aria-label="Coffees" className="product-grid">
        {products.map((product) => (
          <ProductCard key={product.slug} product={product} />
        ))}
      </section>
    </>
  );
}
