// Expense lines of report EXP-0917. Amounts in USD.
export const expenses = [
  { id: "train", item: "Train to Portsmouth", category: "Travel", note: "Off-peak return", amount: 64.2 },
  { id: "hotel", item: "Harbourview Hotel", category: "Lodging", note: "2 nights", amount: 389.0 },
  { id: "dinner", item: "Dinner with client", category: "Meals", note: "Spinnaker Grill", amount: 96.5 },
  { id: "taxi", item: "Taxi from station", category: "Travel", note: "", amount: 18.4 },
  { id: "lunch", item: "Conference lunch", category: "Meals", note: "", amount: 22.9 },
];

// Per-category budgets from the travel policy.
export const budgets = { Travel: 150, Lodging: 400, Meals: 150 };
