export const people = [
  { id: "ada", name: "Ada Okafor", role: "Engineering Manager", team: "Platform", city: "Lagos" },
  { id: "bruno", name: "Bruno Lindqvist", role: "Product Designer", team: "Growth", city: "Stockholm" },
  { id: "chen", name: "Chen Wei", role: "Staff Engineer", team: "Platform", city: "Singapore" },
  { id: "dolores", name: "Dolores Marín", role: "Data Scientist", team: "Insights", city: "Madrid" },
  { id: "emeka", name: "Emeka Obi", role: "Site Reliability Engineer", team: "Platform", city: "London" },
  { id: "farah", name: "Farah Haddad", role: "Product Manager", team: "Growth", city: "Amman" },
];

export function findPerson(id) {
  return people.find((p) => p.id === id);
}
