const dateFormat = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });

export function formatDate(iso) {
  return dateFormat.format(new Date(`${iso}T00:00:00Z`));
}

export function readingTime(minutes) {
  return `${minutes} min read`;
}
