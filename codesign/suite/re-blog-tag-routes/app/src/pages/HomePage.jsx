import PostCard from "../components/PostCard.jsx";
import { postsNewestFirst } from "../data/posts.js";
import { useDocumentTitle } from "../hooks/useDocumentTitle.js";

export default function HomePage() {
  useDocumentTitle();
  const posts = postsNewestFirst();
  return (
    <section>
      <div className="intro">
        <h1>Engineering at Heron</h1>
        <p>
          Notes from the team building Heron's freight platform: databases, frontends, reliability and the
          mistakes we learned from.
        </p>
      </div>
      <div className="post-list">
        {posts.map((post) => (
          <PostCard key={post.slug} post={post} />
        ))}
      </div>
    </section>
  );
}
