import { Link, useParams } from "react-router-dom";
import TagList from "../components/TagList.jsx";
import { findRecipe } from "../data/recipes.js";
import { formatMinutes } from "../lib/format.js";

export default function RecipePage() {
  const { id } = useParams();
  const recipe = findRecipe(id);
  if (!recipe) {
    return (
      <p className="empty">
        We couldn't find that recipe. <Link to="/">Back to all recipes</Link>
      </p>
    );
  }
  return (
    <article className="recipe-detail">
      <Link className="back-link" to="/">
        ← All recipes
      </Link>
      <h1>{recipe.title}</h1>
      <p className="recipe-meta">
        {recipe.cuisine} · {formatMinutes(recipe.minutes)} · Serves {recipe.serves}
      </p>
      <TagList tags={recipe.tags} />
      <div className="recipe-columns">
        <section className="ingredients">
          <h2>Ingredients</h2>
          <ul>
            {recipe.ingredients.map((item) => (
              <li key={item}>{item}</li>
            ))}
          </ul>
        </section>
        <section className="method">
          <h2>Method</h2>
          <ol>
            {recipe.method.map((step) => (
              <li key={step}>{step}</li>
            ))}
          </ol>
        </section>
      </div>
    </article>
  );
}
