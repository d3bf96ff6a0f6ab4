import RecipeCard from "../components/RecipeCard.jsx";
import { recipes } from "../data/recipes.js";

export default function HomePage() {
  return (
    <section>
      <div className="intro">
        <h1>Our recipes</h1>
        <p>Tried, tested and cooked on repeat in the Saltbox kitchen. Every recipe has been made at least five times.</p>
      </div>
      <div className="recipe-grid">
        {recipes.map((recipe) => (
          <RecipeCard key={recipe.id} recipe={recipe} />
        ))}
      </div>
    </section>
  );
}
