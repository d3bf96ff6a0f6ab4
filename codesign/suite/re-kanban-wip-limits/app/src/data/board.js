export const columns = [
  { id: "todo", title: "To do" },
  { id: "in-progress", title: "In progress" },
  { id: "review", title: "Review" },
  { id: "done", title: "Done" },
];

export const members = [
  { id: "rosa", name: "Rosa Klein" },
  { id: "omar", name: "Omar Haddad" },
  { id: "lea", name: "Lea Novak" },
  { id: "sam", name: "Sam Okoye" },
  { id: "jun", name: "Jun Park" },
];

export const tags = ["Frontend", "Backend", "Design", "Bug", "Infra"];

export const sprint = { name: "Sprint 24", team: "Checkout squad", dates: "Sep 15 – Sep 26", goal: "Faster repeat checkout" };

export const initialCards = [
  { id: "CHK-231", title: "Show saved cards at checkout", assignee: "rosa", tag: "Frontend", column: "todo" },
  { id: "CHK-236", title: "Retry failed webhook deliveries", assignee: "omar", tag: "Backend", column: "todo" },
  { id: "CHK-238", title: "Empty-cart illustration and copy", assignee: "lea", tag: "Design", column: "todo" },
  { id: "CHK-240", title: "Rate-limit the coupon endpoint", assignee: "omar", tag: "Infra", column: "todo" },
  { id: "CHK-224", title: "Express pay button on mobile web", assignee: "rosa", tag: "Frontend", column: "in-progress" },
  { id: "CHK-227", title: "VAT rounding on multi-currency orders", assignee: "sam", tag: "Bug", column: "in-progress" },
  { id: "CHK-229", title: "Address autocomplete for UK postcodes", assignee: "lea", tag: "Frontend", column: "in-progress" },
  { id: "CHK-219", title: "Move order emails to the new templates", assignee: "jun", tag: "Backend", column: "review" },
  { id: "CHK-210", title: "Guest checkout without an account", assignee: "rosa", tag: "Frontend", column: "done" },
  { id: "CHK-212", title: "Log payment provider latency", assignee: "sam", tag: "Infra", column: "done" },
  { id: "CHK-215", title: "Promo code field validation", assignee: "jun", tag: "Bug", column: "done" },
];

export function memberName(id) {
  return members.find((m) => m.id === id)?.name ?? "Unassigned";
}
