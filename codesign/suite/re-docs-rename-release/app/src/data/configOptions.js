export const configOptions = [
  {
    name: "pipelines",
    type: "object",
    default: "{}",
    description: "Named pipelines. Each one has `steps` and, optionally, `inputs`, `outputs` and `dependsOn`.",
  },
  { name: "concurrency", type: "number", default: "4", description: "Maximum number of steps running at the same time." },
  { name: "cache", type: "boolean", default: "true", description: "Set to `false` to run every step on every run." },
  {
    name: "cacheDir",
    type: "string",
    default: "node_modules/.cache",
    description: "Where step results are stored between runs.",
  },
  {
    name: "watch.debounceMs",
    type: "number",
    default: "150",
    description: "How long to wait after a file change before re-running a pipeline.",
  },
  {
    name: "logLevel",
    type: "string",
    default: '"info"',
    description: "How much to print while running: `silent`, `info` or `debug`.",
  },
];
