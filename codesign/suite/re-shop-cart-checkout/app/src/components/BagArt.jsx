export default function BagArt({ product, size = "small" }) {
  return (
    <div className={`bag-art bag-${size}`} style={{ "--bag": product.colour }} aria-hidden="true">
      <div className="bag-label">
        <span className="bag-origin">{product.origin}</span>
        <span className="bag-weight">{product.weight}</span>
      </div>
    </div>
  );
}
