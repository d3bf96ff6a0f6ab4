// Inside a sandbox without network: relay TCP ports to unix sockets (and back), then run the command.
//   node relay.js tcp:PORT=unix:PATH ... unix:PATH=tcp:PORT ... -- COMMAND [ARGS...]
// `tcp:P=unix:S` lets the command reach a host service (the model proxy) at 127.0.0.1:P;
// `unix:S=tcp:P` lets the host reach a server the command starts on 127.0.0.1:P.
// The command starts once every listener is up; the relay exits with the command's status.
"use strict";
const net = require("net");
const { spawn } = require("child_process");

const args = process.argv.slice(2);
const split = args.indexOf("--");
const specs = split < 0 ? args : args.slice(0, split);
const command = split < 0 ? [] : args.slice(split + 1);

function endpoint(text) {
  const colon = text.indexOf(":");
  const [kind, value] = [text.slice(0, colon), text.slice(colon + 1)];
  return kind === "tcp" ? { host: "127.0.0.1", port: Number(value) } : { path: value };
}

function run() {
  if (command.length === 0) return;
  const child = spawn(command[0], command.slice(1), { stdio: "inherit" });
  child.on("error", (e) => { console.error(`relay: ${e.message}`); process.exit(127); });
  child.on("exit", (code, signal) => process.exit(code ?? 128 + (require("os").constants.signals[signal] || 0)));
}

let waiting = specs.length;
for (const spec of specs) {
  const [from, to] = spec.split("=");
  const server = net.createServer((client) => {
    const upstream = net.connect(endpoint(to));
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  server.on("error", (e) => { console.error(`relay: ${spec}: ${e.message}`); process.exit(126); });
  server.listen(endpoint(from), () => { if (--waiting === 0) run(); });
}
if (specs.length === 0) run();
