const longDate = new Intl.DateTimeFormat("en-GB", {
  weekday: "long",
  day: "numeric",
  month: "long",
  year: "numeric",
  timeZone: "UTC",
});

/** "2025-03-10" -> a Date at midnight UTC (the app's dates carry no time of day). */
export function parseIsoDate(iso) {
  return new Date(`${iso}T00:00:00Z`);
}

export function formatLongDate(iso) {
  return longDate.format(parseIsoDate(iso));
}

export function weekdayName(iso) {
  return new Intl.DateTimeFormat("en-GB", { weekday: "long", timeZone: "UTC" }).format(parseIsoDate(iso));
}
