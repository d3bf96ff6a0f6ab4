// The catalogue module other code relies on (src/data/products.js), run with Node's own test runner on the
// final workspace: the cart must be built on it, not by changing it.
import assert from "node:assert/strict";
import { test } from "node:test";

const { products, findProduct, formatPrice } = await import(`${process.cwd()}/src/data/products.js`);

test("the six coffees keep their slugs, names and prices in cents", () => {
  assert.deepEqual(
    products.map((p) => [p.slug, p.name, p.price]),
    [
      ["huila-pink-bourbon", "Huila Pink Bourbon", 1850],
      ["guji-natural", "Guji Natural", 1700],
      ["kiambu-aa", "Kiambu AA", 1950],
      ["santos-daily", "Santos Daily", 3400],
      ["night-shift-espresso", "Night Shift Espresso", 2200],
      ["mountain-water-decaf", "Mountain Water Decaf", 1600],
    ],
  );
});

test("findProduct finds a coffee by slug and nothing for an unknown one", () => {
  assert.equal(findProduct("kiambu-aa").name, "Kiambu AA");
  assert.equal(findProduct("no-such-coffee"), undefined);
});

test("formatPrice formats cents the way the shop does", () => {
  assert.equal(formatPrice(1700), "$17.00");
  assert.equal(formatPrice(5350), "$53.50");
  assert.equal(formatPrice(0), "$0.00");
});
