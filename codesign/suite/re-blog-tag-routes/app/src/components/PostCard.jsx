import { Link } from "react-router-dom";
import Byline from "./Byline.jsx";
import TagList from "./TagList.jsx";

export default function PostCard({ post }) {
  return (
    <article className="post-card" data-slug={post.slug}>
      <h2 className="post-card-title">
        <Link to={`/posts/${post.slug}`}>{post.title}</Link>
      </h2>
      <Byline post={post} />
      <p className="summary">{post.summary}</p>
      <TagList tags={post.tags} />
    </article>
  );
}
