// Newest release first.
export const releases = [
  {
    version: "2.4.0",
    date: "2025-03-18",
    changes: [
      "`pipewright graph --format mermaid` prints the pipeline graph as a Mermaid diagram.",
      "Steps can set `env` to pass extra environment variables to their commands.",
      "Fixed: `pipewright watch` no longer runs twice when an editor saves through a temporary file.",
    ],
  },
  {
    version: "2.3.1",
    date: "2025-01-27",
    changes: [
      "Fixed a crash when a pipeline declared an empty `outputs` array.",
      "`PIPEWRIGHT_LOG_LEVEL=debug` now prints the cache key of every step.",
    ],
  },
  {
    version: "2.3.0",
    date: "2024-12-09",
    changes: [
      "New `pipewright cache clean` command.",
      "`concurrency` now defaults to 4 instead of the number of CPU cores.",
    ],
  },
  {
    version: "2.2.0",
    date: "2024-10-14",
    changes: [
      "Pipewright now ships a JSON schema, so editors autocomplete `pipewright.config.json`.",
      "Added `--dry-run` to `pipewright run`.",
    ],
  },
];
