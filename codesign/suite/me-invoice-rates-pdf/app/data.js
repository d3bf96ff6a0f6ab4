// Invoice INV-2026-031 for Harbor & Pine Coffee Co. Amounts in EUR, excluding VAT.

export const invoice = {
  number: "INV-2026-031",
  issued: "30 April 2026",
  due: "30 May 2026",
  client: "Harbor & Pine Coffee Co.\nOudegracht 118, 3511 AV Utrecht",
  project: "Project: mobile ordering app, April 2026",
};

// The hourly rates the client signed off on. Shown in the sidebar; lines are checked against it.
export const rateCard = {
  ref: "RC-2026-01",
  signed: "8 January 2026",
  rates: [
    { role: "Art direction", rate: 95 },
    { role: "UX/UI design", rate: 85 },
    { role: "Front-end development", rate: 90 },
    { role: "Copywriting", rate: 70 },
    { role: "Project management", rate: 60 },
    { role: "Illustration", rate: 80 },
  ],
};

// Invoice lines. Each line keeps its own rate so one-off rates stay possible.
export const lines = [
  { id: "art", role: "Art direction", description: "Brand refresh, moodboards and review rounds", hours: 6, rate: 95 },
  { id: "ux", role: "UX/UI design", description: "Ordering flows, checkout and loyalty screens", hours: 18, rate: 85 },
  { id: "fe", role: "Front-end development", description: "Ordering web app build and QA fixes", hours: 24, rate: 90 },
  { id: "copy", role: "Copywriting", description: "Menu descriptions and onboarding copy", hours: 5, rate: 70 },
  { id: "pm", role: "Project management", description: "Planning, client calls and hand-over", hours: 4, rate: 60 },
];

export const discount = { label: "Returning-client discount", rate: 0.1 };
export const vatRate = 0.2;
