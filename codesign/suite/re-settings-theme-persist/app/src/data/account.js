export const initialProfile = {
  name: "Elena Marsh",
  email: "elena.marsh@example.com",
  language: "en-GB",
  timezone: "Europe/Lisbon",
  notifications: { summary: true, mentions: true, product: false },
};

export const languages = [
  { value: "en-GB", label: "English (UK)" },
  { value: "en-US", label: "English (US)" },
  { value: "pt-PT", label: "Português" },
  { value: "de-DE", label: "Deutsch" },
];

export const timezones = ["Europe/Lisbon", "Europe/London", "Europe/Berlin", "America/New_York", "Asia/Singapore"];

export const workspace = {
  name: "Marsh & Co. Studio",
  role: "Workspace owner",
  memberSince: "March 2021",
  notebooks: 38,
  sharedWith: 6,
  storageUsedGb: 2.4,
  storageTotalGb: 10,
};

export const activity = [
  { id: 1, what: "Edited “Q4 content calendar”", when: "Today, 09:42" },
  { id: 2, what: "Shared “Client onboarding checklist” with Tom Reyes", when: "Yesterday, 16:10" },
  { id: 3, what: "Created notebook “Workshop notes — Porto”", when: "Mon, 11:05" },
  { id: 4, what: "Restored 3 pages from trash", when: "Last week" },
];

export const billing = {
  plan: "Team plan",
  price: "$48.00 / month",
  seats: 6,
  renews: "Oct 12, 2026",
  card: "Visa ending 4242",
  cardExpiry: "08/27",
  invoices: [
    { id: "INV-2026-009", date: "Sep 12, 2026", amount: "$48.00", status: "Paid" },
    { id: "INV-2026-008", date: "Aug 12, 2026", amount: "$48.00", status: "Paid" },
    { id: "INV-2026-007", date: "Jul 12, 2026", amount: "$48.00", status: "Paid" },
    { id: "INV-2026-006", date: "Jun 12, 2026", amount: "$40.00", status: "Paid" },
    { id: "INV-2026-005", date: "May 12, 2026", amount: "$40.00", status: "Paid" },
    { id: "INV-2026-004", date: "Apr 12, 2026", amount: "$40.00", status: "Refunded" },
  ],
};
