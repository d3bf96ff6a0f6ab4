export default function TagList({ tags }) {
  return (
    <ul className="recipe-tags" aria-label="Tags">
      {tags.map((tag) => (
        <li key={tag}>{tag}</li>
      ))}
    </ul>
  );
}
