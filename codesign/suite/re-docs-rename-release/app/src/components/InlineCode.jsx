// Renders `backticked` spans of a plain string as <code>.
export default function InlineCode({ text }) {
  return text.split("`").map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part));
}
