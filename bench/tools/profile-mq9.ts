/**
 * Where the CPU of an mq9 SEND goes, on the embedded runtime: hosts the
 * Worker in Miniflare in THIS process with workerd's V8 inspector open and
 * the NATS TCP bridge next to it (as `mortarmq dev` does), drives a load
 * from a child process (nats.js request/reply through the bridge, 32 in
 * flight, or HTTP SEND round-robin over 100 mailboxes / to one), and takes
 * a V8 CPU profile of workerd (Chrome DevTools protocol over the inspector)
 * and of this process (the bridge, node:inspector) while it runs.
 *
 * Prints self time per request, µs, by function and by source file, for
 * both processes, and writes the raw profiles (.cpuprofile, for DevTools).
 *
 * Usage: npx tsx bench/tools/profile-mq9.ts [nats|http100|http1] [seconds] [outdir]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { startBridges } from "../../client/bridge/bridges";
import { hostWorker } from "../../client/local/miniflare-host";
import { freePort } from "../../client/local/ports";
import { PACKAGE_ROOT } from "../../client/local/root";

/** A V8 CPU profile (Profiler.stop's result). */
interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Self time per key (µs), from a profile's samples. */
export function selfTime(p: Profile, key: (f: Profile["nodes"][number]["callFrame"]) => string): Map<string, number> {
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const out = new Map<string, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const k = key(byId.get(p.samples[i]!)!);
    out.set(k, (out.get(k) ?? 0) + (p.timeDeltas[i + 1] ?? 0));
  }
  return out;
}

const short = (url: string) => url.replace(/^.*\/(node_modules\/)/, "$1").replace(/^file:\/\/.*?\/(?=(client|wire|objects|worker)\/)/, "");

function report(title: string, p: Profile, requests: number, top = 25): string {
  const lines = [`## ${title}: ${requests} requests, ${((p.endTime - p.startTime) / 1e6).toFixed(1)} s profiled`];
  const per = (us: number) => (us / requests).toFixed(2).padStart(8);
  for (const [name, key] of [
    ["by file", (f: Profile["nodes"][number]["callFrame"]) => short(f.url) || `(${f.functionName || "native"})`],
    ["by function", (f: Profile["nodes"][number]["callFrame"]) => `${f.functionName || "(anonymous)"} ${short(f.url)}:${f.lineNumber + 1}`],
  ] as const) {
    const m = [...selfTime(p, key)].sort((a, b) => b[1] - a[1]);
    const total = m.reduce((s, [, v]) => s + v, 0);
    lines.push(`### self µs/request ${name} (total ${per(total)})`);
    for (const [k, v] of m.slice(0, top)) lines.push(`${per(v)}  ${k}`);
  }
  return lines.join("\n");
}

/** A CDP client on one WebSocket. */
async function cdp(url: string): Promise<(method: string, params?: object) => Promise<any>> {
  const ws = new WebSocket(url);
  await new Promise((res, rej) => ws.once("open", res).once("error", rej));
  let id = 0;
  const waiting = new Map<number, (m: any) => void>();
  ws.on("message", (d) => {
    const m = JSON.parse(String(d));
    if (m.id !== undefined) waiting.get(m.id)?.(m);
  });
  return (method, params = {}) =>
    new Promise((res, rej) => {
      const i = ++id;
      waiting.set(i, (m) => (m.error ? rej(new Error(JSON.stringify(m.error))) : res(m.result)));
      ws.send(JSON.stringify({ id: i, method, params }));
    });
}

const LOAD = `
import { connect } from "nats";
import http from "node:http";
const [kind, ms, natsPort, httpPort] = process.argv.slice(1);
const payload = new TextEncoder().encode(JSON.stringify({ text: "x".repeat(48) }));
let n = 0;
const end = Date.now() + Number(ms);
if (kind === "nats") {
  const nc = await connect({ servers: "127.0.0.1:" + natsPort });
  await Promise.all(Array.from({ length: 32 }, async () => { while (Date.now() < end) { await nc.request("$mq9.AI.MSG.SEND.bench.inbox", payload, { timeout: 30000 }); n++; } }));
  await nc.close();
} else {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const call = (path) => new Promise((res, rej) => { const r = http.request({ host: "127.0.0.1", port: httpPort, path, method: "POST", agent, headers: { "content-length": payload.length } }, (s) => { s.resume(); s.on("end", () => s.statusCode < 300 ? res() : rej(new Error(String(s.statusCode)))); }); r.on("error", rej); r.end(payload); });
  let k = 0;
  await Promise.all(Array.from({ length: 32 }, async () => { while (Date.now() < end) { await call("/mq9/$mq9.AI.MSG.SEND." + (kind === "http1" ? "box.0" : "box." + (k++ % 100))); n++; } }));
  agent.destroy();
}
process.stdout.write(String(n));
`;

function load(kind: string, ms: number, natsPort: number, httpPort: number): Promise<number> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", LOAD, kind, String(ms), String(natsPort), String(httpPort)], { cwd: PACKAGE_ROOT, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  return new Promise((res, rej) => child.on("exit", (code) => (code === 0 ? res(Number(out)) : rej(new Error(`load exited ${code}`)))));
}

async function main(): Promise<void> {
  const [kind = "nats", secs = "10", outDir = tmpdir()] = process.argv.slice(2);
  const dir = mkdtempSync(join(tmpdir(), "mortarmq-profile-"));
  const inspectorPort = await freePort("127.0.0.1");
  const w = await hostWorker({ root: PACKAGE_ROOT, host: "127.0.0.1", port: 0, stateDir: dir, vars: {}, verbose: false, inspectorPort, directHttp: true }); // the HTTP port as mortarmq dev has it
  const { started } = await startBridges({ url: w.loopbackUrl, nats: { host: "127.0.0.1", port: 0 } });
  try {
    const post = (path: string, body: string) => fetch(`${w.loopbackUrl}${path}`, { method: "POST", body }).then((r) => r.text());
    await post("/mq9/$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: "bench.inbox", ttl: 0 }));
    for (let i = 0; i < 100; i++) await post("/mq9/$mq9.AI.MAILBOX.CREATE", JSON.stringify({ name: `box.${i}`, ttl: 3600 }));
    const natsPort = started[0]!.tunnel.port;
    await load(kind, 2000, natsPort, w.port); // warm-up
    const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as { webSocketDebuggerUrl: string; title?: string }[];
    const wk = await cdp(targets.find((t) => !/^miniflare|^core:/.test(t.title ?? ""))?.webSocketDebuggerUrl ?? targets[0]!.webSocketDebuggerUrl);
    await wk("Profiler.enable");
    await wk("Profiler.setSamplingInterval", { interval: 100 });
    const self = new Session();
    self.connect();
    await self.post("Profiler.enable");
    await self.post("Profiler.setSamplingInterval", { interval: 100 });
    await wk("Profiler.start");
    await self.post("Profiler.start");
    const n = await load(kind, Number(secs) * 1000, natsPort, w.port);
    const pw = (await wk("Profiler.stop")).profile as Profile;
    const ps = (await self.post("Profiler.stop")).profile as unknown as Profile;
    writeFileSync(join(outDir, `workerd-${kind}.cpuprofile`), JSON.stringify(pw));
    writeFileSync(join(outDir, `bridge-${kind}.cpuprofile`), JSON.stringify(ps));
    console.log(`targets: ${targets.map((t) => t.title).join(", ")}`);
    console.log(report(`workerd (${kind})`, pw, n));
    console.log(report(`launcher/bridge (${kind})`, ps, n, 15));
  } finally {
    await Promise.all(started.map((s) => s.tunnel.close()));
    await w.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
