import { PRODUCT_NAME, VERSION } from "../site.js";

export default function Footer() {
  return (
    <footer className="site-footer">
      <p>
        {PRODUCT_NAME} {VERSION} · Released under the MIT License
      </p>
      <p>These docs describe the latest release. Found a mistake? Open an issue on the docs repository.</p>
    </footer>
  );
}
