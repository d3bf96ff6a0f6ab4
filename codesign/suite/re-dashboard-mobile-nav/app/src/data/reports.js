export const reports = [
  { id: "r1", name: "Weekly revenue summary", schedule: "Every Monday, 08:00", owner: "Jordan Miles", format: "PDF + email" },
  { id: "r2", name: "Subscription churn", schedule: "1st of the month", owner: "Aisha Bello", format: "Dashboard" },
  { id: "r3", name: "Wholesale orders by region", schedule: "Every Friday, 16:00", owner: "Jordan Miles", format: "CSV export" },
  { id: "r4", name: "Cohort retention (monthly)", schedule: "1st of the month", owner: "Wei Zhang", format: "Dashboard" },
  { id: "r5", name: "Refunds and chargebacks", schedule: "Daily, 07:00", owner: "Aisha Bello", format: "Email" },
];

export const integrations = [
  { id: "store", name: "Online storefront", detail: "Orders and products sync every 15 minutes", connected: true },
  { id: "payments", name: "Card payments", detail: "Payouts, refunds and disputes", connected: true },
  { id: "email", name: "Email marketing", detail: "Send customer segments to campaigns", connected: true },
  { id: "accounting", name: "Accounting", detail: "Push daily sales journals", connected: false },
  { id: "pos", name: "Café POS terminals", detail: "In-store sales from 2 locations", connected: false },
];
