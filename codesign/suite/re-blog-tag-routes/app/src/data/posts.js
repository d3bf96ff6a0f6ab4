// Blog posts. Kept in the order they were drafted; pages sort them by date (newest first).
export const authors = {
  mara: { name: "Mara Lindgren", role: "Staff Engineer, Data Platform" },
  tobi: { name: "Tobi Adeyemi", role: "Frontend Lead" },
  priya: { name: "Priya Raman", role: "Senior Engineer, Developer Experience" },
  jonas: { name: "Jonas Keller", role: "Site Reliability Engineer" },
  ines: { name: "Inês Carvalho", role: "Accessibility Specialist" },
};

export const posts = [
  {
    slug: "postgres-partial-indexes",
    title: "How partial indexes cut our Postgres bill by 40%",
    date: "2025-03-18",
    author: "mara",
    readingMinutes: 7,
    tags: ["postgres", "performance"],
    summary:
      "Most of our shipment queries only ever touch open shipments. Indexing just those rows shrank our indexes from 310 GB to 74 GB.",
    body: [
      "Ninety-six percent of the rows in our shipments table are closed: delivered, cancelled or archived. Yet almost every query the dispatch screens run asks about the other four percent. For years we indexed the whole table anyway, and paid for it in memory, disk and vacuum time.",
      "A partial index only stores the rows that match its WHERE clause. We replaced six full indexes with partial ones filtered on status in ('booked', 'in_transit', 'exception'). The planner picks them up as long as the query repeats the same predicate, so we added it to the repository layer rather than trusting every caller to remember.",
      "The result: total index size went from 310 GB to 74 GB, the working set fits in memory again, and we moved the primary to an instance class one size down. The one surprise was a reporting job that queried closed shipments by customer; it now has its own small index and runs at night.",
    ],
  },
  {
    slug: "react-server-components-dashboard",
    title: "Moving the fleet dashboard to React Server Components",
    date: "2025-05-06",
    author: "tobi",
    readingMinutes: 9,
    tags: ["react", "performance", "frontend"],
    summary:
      "Our fleet dashboard shipped 1.2 MB of JavaScript to render what is mostly a table. Here is how we got it under 300 KB without a rewrite.",
    body: [
      "The fleet dashboard is the first screen dispatchers open in the morning, and on the depot tablets it took over six seconds to become interactive. Profiling showed the time going into parsing and hydrating components that never change after the first render.",
      "We moved the vehicle table, the route summaries and the map legend to server components, and kept only the filters, the live-position layer and the assignment drawer on the client. Data fetching moved next to the components that need it, which let us delete a 900-line client-side cache.",
      "JavaScript sent to the browser dropped from 1.2 MB to 280 KB and time to interactive on the tablets is now 1.9 seconds. The hardest part was not the framework but drawing the client boundary: every prop that crosses it has to be serialisable, and a few of our date helpers were not.",
    ],
  },
  {
    slug: "flaky-tests-quarantine",
    title: "Quarantining flaky tests without losing signal",
    date: "2025-01-22",
    author: "priya",
    readingMinutes: 6,
    tags: ["testing", "ci"],
    summary:
      "Retrying flaky tests hides real failures. We built a quarantine lane that keeps them running, reports them, and gives each one an owner.",
    body: [
      "At our worst, one pull request in five needed a re-run because of a test that failed for reasons unrelated to the change. Engineers learned to hit retry without reading the failure, which is exactly the habit that lets real bugs through.",
      "Our quarantine lane moves a test out of the blocking suite after three unexplained failures in a week. It still runs on every build, its results are stored, and a bot opens an issue assigned to the team that owns the file. A quarantined test that passes two hundred times in a row is proposed for release back into the blocking suite.",
      "Re-runs dropped from 19% of pull requests to 3%. More importantly, the quarantine list is short and visible: it is reviewed in the weekly platform meeting, and nothing stays there for more than a month without a decision.",
    ],
  },
  {
    slug: "accessible-data-tables",
    title: "Building data tables screen-reader users can actually use",
    date: "2025-04-10",
    author: "ines",
    readingMinutes: 8,
    tags: ["accessibility", "react", "frontend"],
    summary:
      "Sortable, filterable and paginated tables are everywhere in our product. We rebuilt our table component around native semantics first.",
    body: [
      "Our old table component was a grid of divs with click handlers. It looked fine and was nearly unusable with a screen reader: no header associations, sort buttons announced as 'clickable', and pagination that silently replaced the content.",
      "The new component starts from a real table element with scoped header cells. Sort controls are buttons inside the headers and expose aria-sort on the column. After filtering or changing pages, a polite live region announces the new row count instead of moving focus.",
      "We tested each change with three screen readers and with two dispatchers who use them every day. Their feedback changed our design twice, most notably by keeping the row count in the table caption so it is read when entering the table.",
    ],
  },
  {
    slug: "otel-tracing-rollout",
    title: "What we learned rolling out OpenTelemetry tracing",
    date: "2025-02-12",
    author: "jonas",
    readingMinutes: 10,
    tags: ["observability", "devops"],
    summary:
      "Tracing 40 services took four months, two collector redesigns and one very expensive sampling mistake.",
    body: [
      "We started with auto-instrumentation in the three services behind the booking API. Within a week we could see why a quote request sometimes took eight seconds: a synchronous call to the rates service that retried on timeout without backing off.",
      "Scaling to all 40 services was harder. Our first collector deployment sampled at the edge, which meant traces were cut in half whenever two services disagreed. We moved to tail-based sampling in a dedicated collector tier, keeping every trace with an error and ten percent of the rest.",
      "The expensive mistake: for two weeks a misconfigured pipeline exported every span, and our tracing bill for that month was larger than our database bill. We now alert on span volume per service, just as we alert on error rates.",
    ],
  },
  {
    slug: "zero-downtime-migrations",
    title: "Zero-downtime schema migrations on a 2 TB table",
    date: "2025-06-03",
    author: "mara",
    readingMinutes: 11,
    tags: ["postgres", "devops"],
    summary:
      "Changing a column type on our largest table used to mean a maintenance window. Now it is an ordinary deploy in four steps.",
    body: [
      "The tracking_events table receives about 3,000 writes a second and holds 2 TB of data. Any migration that takes an exclusive lock on it stops the drivers' apps from reporting positions, so for years we batched schema changes into quarterly maintenance windows.",
      "Our playbook now has four deploys: add the new column, dual-write from the application, backfill in batches of 50,000 rows with a pause between batches, then switch reads and drop the old column. Each step is reversible, and the backfill job reports its progress to the deploy dashboard.",
      "We also set a lock_timeout of two seconds on every migration session. A migration that cannot get its lock fails fast and is retried, instead of queueing behind a long transaction and blocking every write that arrives after it.",
    ],
  },
  {
    slug: "css-container-queries",
    title: "Container queries replaced half of our media queries",
    date: "2024-12-09",
    author: "tobi",
    readingMinutes: 5,
    tags: ["css", "frontend"],
    summary:
      "Our cards live in sidebars, drawers and full-width pages. Sizing them by their container instead of the viewport removed a pile of special cases.",
    body: [
      "The shipment card appears in nine places in the product. With media queries, each placement needed its own overrides, because a card in a 320-pixel drawer on a wide screen is still a narrow card.",
      "We declared the card's wrapper as a size container and rewrote the breakpoints as container queries. The card now switches from a stacked to a two-column layout when its container is wider than 420 pixels, wherever it is placed.",
      "Across the component library we deleted 212 media queries and 37 modifier classes. Browser support was not an issue for our users, and we kept a simple stacked fallback for the few old tablets still in the depots.",
    ],
  },
  {
    slug: "typed-api-clients",
    title: "Generating typed API clients from our OpenAPI spec",
    date: "2025-03-03",
    author: "priya",
    readingMinutes: 7,
    tags: ["typescript", "react", "frontend", "testing"],
    summary:
      "Hand-written fetch wrappers drifted from the API every sprint. Generated clients and contract tests closed the gap.",
    body: [
      "Our web app talked to the booking API through 140 hand-written fetch helpers. Whenever a field was renamed on the server, something in the UI broke quietly, usually a form that stopped saving one optional value.",
      "We now generate TypeScript types and a thin client from the OpenAPI spec on every build, and wrap the client in React Query hooks. A renamed field is a compile error in the pull request that renamed it, not a bug report a week later.",
      "Types only cover the shape of the data, so we added contract tests that replay recorded responses against the spec in CI. Together they caught 31 mismatches in the first month, most of them in endpoints nobody had touched in a year.",
    ],
  },
];

/** Posts ordered newest first, the order the blog shows them in. */
export function postsNewestFirst() {
  return [...posts].sort((a, b) => b.date.localeCompare(a.date));
}

export function findPost(slug) {
  return posts.find((post) => post.slug === slug);
}
