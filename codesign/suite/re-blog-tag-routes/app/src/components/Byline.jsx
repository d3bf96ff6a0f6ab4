import { authors } from "../data/posts.js";
import { formatDate, readingTime } from "../lib/format.js";

export default function Byline({ post }) {
  const author = authors[post.author];
  return (
    <p className="byline">
      <span className="author">{author.name}</span>
      <span aria-hidden="true"> · </span>
      <time dateTime={post.date}>{formatDate(post.date)}</time>
      <span aria-hidden="true"> · </span>
      <span>{readingTime(post.readingMinutes)}</span>
    </p>
  );
}
