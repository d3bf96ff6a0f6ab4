// Prices are kept in cents so sums never pick up floating-point dust.
export const products = [
  {
    slug: "huila-pink-bourbon",
    name: "Huila Pink Bourbon",
    origin: "Colombia",
    region: "Pitalito, Huila",
    process: "Washed",
    roast: "Light",
    notes: ["Red grape", "Hibiscus", "Panela"],
    weight: "250 g",
    price: 1850,
    colour: "#c8557a",
    description:
      "A rare Bourbon mutation grown by the Ortega family at 1,650 m. Bright and juicy as a filter, surprisingly sweet as an espresso.",
  },
  {
    slug: "guji-natural",
    name: "Guji Natural",
    origin: "Ethiopia",
    region: "Hambela, Guji",
    process: "Natural",
    roast: "Light",
    notes: ["Blueberry", "Jasmine", "Cacao nib"],
    weight: "250 g",
    price: 1700,
    colour: "#5b5fa8",
    description:
      "Dried whole on raised beds for 21 days. Heady fruit on the nose, a clean floral finish once it cools a little.",
  },
  {
    slug: "kiambu-aa",
    name: "Kiambu AA",
    origin: "Kenya",
    region: "Kiambu County",
    process: "Washed",
    roast: "Light–medium",
    notes: ["Blackcurrant", "Grapefruit", "Brown sugar"],
    weight: "250 g",
    price: 1950,
    colour: "#8a3b3b",
    description:
      "SL28 and SL34 from a cooperative of 600 smallholders. Big, structured acidity that softens into brown-sugar sweetness.",
  },
  {
    slug: "santos-daily",
    name: "Santos Daily",
    origin: "Brazil",
    region: "Alta Mogiana",
    process: "Pulped natural",
    roast: "Medium",
    notes: ["Hazelnut", "Milk chocolate", "Toffee"],
    weight: "1 kg",
    price: 3400,
    colour: "#b07a3c",
    description:
      "Our house coffee in a big bag. Forgiving in any brewer and friendly with milk — the one we drink at the roastery all day.",
  },
  {
    slug: "night-shift-espresso",
    name: "Night Shift Espresso",
    origin: "Brazil & Guatemala",
    region: "Blend",
    process: "Natural / Washed",
    roast: "Medium–dark",
    notes: ["Dark chocolate", "Molasses", "Roasted almond"],
    weight: "500 g",
    price: 2200,
    colour: "#2f2a3a",
    description:
      "Two-thirds Brazil for body, one-third Guatemalan Huehuetenango for lift. Built for flat whites and long shots.",
  },
  {
    slug: "mountain-water-decaf",
    name: "Mountain Water Decaf",
    origin: "Mexico",
    region: "Chiapas",
    process: "Mountain Water Process",
    roast: "Medium",
    notes: ["Cocoa", "Orange peel", "Caramel"],
    weight: "250 g",
    price: 1600,
    colour: "#3f7a5c",
    description:
      "Decaffeinated with nothing but water from the Pico de Orizaba. All the evening comfort, none of the 3 a.m. ceiling staring.",
  },
];

export function findProduct(slug) {
  return products.find((p) => p.slug === slug);
}

export function formatPrice(cents) {
  return `$${(cents / 100).toFixed(2)}`;
}
