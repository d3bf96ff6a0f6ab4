export default function Footer() {
  return (
    <footer className="site-footer">
      <p>Roasted every Tuesday in small batches · Unit 4, Canal Works, Leeds</p>
      <p>Orders placed before Monday midnight ship with that week's roast.</p>
    </footer>
  );
}
