import { Link } from "react-router-dom";
import { formatMinutes } from "../lib/format.js";
import TagList from "./TagList.jsx";

const CUISINE_COLOURS = {
  Japanese: "#e9d8f4",
  Indian: "#fde2c4",
  Mexican: "#d9f0d3",
  American: "#fff0b8",
  "Middle Eastern": "#f9d5cf",
  Italian: "#d6ecf5",
  Thai: "#dff3e8",
  Mediterranean: "#fbe3d3",
};

export default function RecipeCard({ recipe }) {
  return (
    <article className="recipe-card" data-id={recipe.id}>
      <div className="recipe-band" style={{ background: CUISINE_COLOURS[recipe.cuisine] ?? "#eee" }}>
        <span className="cuisine">{recipe.cuisine}</span>
      </div>
      <div className="recipe-body">
        <h2 className="recipe-title">
          <Link to={`/recipes/${recipe.id}`}>{recipe.title}</Link>
        </h2>
        <p className="recipe-meta">
          <span className="time">{formatMinutes(recipe.minutes)}</span>
          <span aria-hidden="true"> · </span>
          <span>Serves {recipe.serves}</span>
        </p>
        <TagList tags={recipe.tags} />
      </div>
    </article>
  );
}
