import { createContext, useContext, useMemo, useReducer } from "react";
import { initialCards } from "../data/board.js";

const BoardContext = createContext(null);

function reducer(cards, action) {
  switch (action.type) {
    case "move":
      return cards.map((card) => (card.id === action.id ? { ...card, column: action.column } : card));
    case "add":
      return [...cards, action.card];
    default:
      return cards;
  }
}

function nextId(cards) {
  const highest = Math.max(...cards.map((c) => Number(c.id.split("-")[1])));
  return `CHK-${highest + 1}`;
}

export function BoardProvider({ children }) {
  const [cards, dispatch] = useReducer(reducer, initialCards);
  const value = useMemo(
    () => ({
      cards,
      cardsIn: (column) => cards.filter((c) => c.column === column),
      moveCard: (id, column) => dispatch({ type: "move", id, column }),
      addCard: ({ title, assignee, tag }) =>
        dispatch({ type: "add", card: { id: nextId(cards), title, assignee, tag, column: "todo" } }),
    }),
    [cards],
  );
  return <BoardContext.Provider value={value}>{children}</BoardContext.Provider>;
}

export function useBoard() {
  const value = useContext(BoardContext);
  if (!value) throw new Error("useBoard must be used inside BoardProvider");
  return value;
}
