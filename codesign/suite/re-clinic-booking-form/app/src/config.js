export const CLINIC = {
  name: "Kestrel Physiotherapy",
  phone: "0113 496 0712",
  email: "hello@kestrelphysio.co.uk",
  address: ["Unit 4, Tannery Yard", "Kirkgate", "Otley LS21 3AD"],
};

// The date the site treats as "today". Staging builds pin it so screenshots and QA scripts are
// repeatable; production overrides it at deploy time. Format: YYYY-MM-DD.
export const TODAY = "2025-03-10";

export const OPENING_HOURS = [
  { day: "Monday", hours: "8:00 – 19:00" },
  { day: "Tuesday", hours: "8:00 – 19:00" },
  { day: "Wednesday", hours: "8:00 – 19:00" },
  { day: "Thursday", hours: "8:00 – 20:00" },
  { day: "Friday", hours: "8:00 – 17:00" },
  { day: "Saturday", hours: "9:00 – 13:00" },
  { day: "Sunday", hours: "Closed" },
];
