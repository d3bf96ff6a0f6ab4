const palette = ["#fde2e4", "#dbeafe", "#dcfce7", "#fef3c7", "#ede9fe"];

export default function Avatar({ name, small }) {
  const initials = name
    .split(" ")
    .map((part) => part[0])
    .join("");
  const colour = palette[name.length % palette.length];
  return (
    <span className={small ? "avatar small" : "avatar"} style={{ background: colour }} title={name} aria-hidden="true">
      {initials}
    </span>
  );
}
