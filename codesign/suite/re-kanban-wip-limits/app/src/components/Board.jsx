import { columns } from "../data/board.js";
import { useBoard } from "../state/BoardContext.jsx";
import Column from "./Column.jsx";

export default function Board() {
  const { cardsIn } = useBoard();
  return (
    <div className="board">
      {columns.map((column) => (
        <Column key={column.id} column={column} cards={cardsIn(column.id)} />
      ))}
    </div>
  );
}
