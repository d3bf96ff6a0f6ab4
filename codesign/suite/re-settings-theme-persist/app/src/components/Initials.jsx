export default function Initials({ name, large }) {
  const initials = name
    .split(" ")
    .filter(Boolean)
    .map((part) => part[0])
    .slice(0, 2)
    .join("");
  return (
    <span className={large ? "initials large" : "initials"} aria-hidden="true">
      {initials}
    </span>
  );
}
