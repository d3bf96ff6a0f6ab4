import { Link, useParams } from "react-router-dom";
import Byline from "../components/Byline.jsx";
import TagList from "../components/TagList.jsx";
import { authors, findPost } from "../data/posts.js";
import { useDocumentTitle } from "../hooks/useDocumentTitle.js";
import NotFound from "./NotFound.jsx";

export default function PostPage() {
  const { slug } = useParams();
  const post = findPost(slug);
  useDocumentTitle(post ? post.title : "Post not found");
  if (!post) {
    return <NotFound />;
  }
  const author = authors[post.author];
  return (
    <article className="post">
      <Link className="back-link" to="/">
        ← All posts
      </Link>
      <h1>{post.title}</h1>
      <Byline post={post} />
      <TagList tags={post.tags} />
      <div className="post-body">
        {post.body.map((paragraph, i) => (
          <p key={i}>{paragraph}</p>
        ))}
      </div>
      <footer className="author-box">
        <strong>{author.name}</strong>
        <span>{author.role}</span>
      </footer>
    </article>
  );
}
