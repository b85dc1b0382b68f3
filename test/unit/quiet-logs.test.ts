/**
 * The filter that keeps a green `npm test` quiet (test/harness/quiet-logs.ts,
 * docs/testing.md): it drops exactly the known harness noise — lines copied
 * from a real run — and lets everything else through, real errors first.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { installWorkerdNoiseFilter, isExpectedConsoleLog, isWorkerdNoise } from "../harness/quiet-logs";

/** objects/tenants/auth.ts OPEN_MODE_LOG as the Worker logs it (unit tests do not load the objects' platform types; if it changes, the run shows it again). */
const OPEN_MODE_LOG = 'mortarmq: running OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured, every client is tenant "default" '
  + "(set AUTH_TOKENS, e.g. `mortarmq dev --auth-tokens <token>:<tenant>`, or ADMIN_TOKEN and issue tokens, to require tokens)";

// Lines as a green run printed them before the filter (workerd 1.20260426.1).
const PEER_DISCONNECTED = "exception = workerd/api/web-socket.c++:821: disconnected: WebSocket peer disconnected\n";
const EVICTED = "uncaught exception; exception = workerd/api/actor-state.c++:1142: failed: broken.outputGateBroken; jsg.Error: evicted by the test\n";
const RESTART = "uncaught exception; exception = workerd/api/actor-state.c++:1142: failed: broken.outputGateBroken; jsg.Error: restart\n";
const STACK = "stack: /x/node_modules/@cloudflare/workerd-linux-64/bin/workerd@2f201f0 /x/node_modules/@cloudflare/workerd-linux-64/bin/workerd@2f20430\n";
const TEARDOWN = 'uncaught exception; source = Uncaught (in promise); stack = EnvironmentTeardownError: [vitest-worker]: Closing rpc while "resolve" was pending\n'
  + "    at work/x/node_modules/vitest/dist/chunks/init.k9zZ9sLh.js:133:12\n"
  + "    at Array.map (<anonymous>)\n"
  + "    at Proxy.$rejectPendingCalls (work/x/node_modules/vitest/dist/chunks/index.Chj8NDwU.js:137:62)\n"
  + "    at onMessage (work/x/node_modules/vitest/dist/chunks/init.k9zZ9sLh.js:287:14)\n";
const ALARM = "NOSENTRY SQLite alarm handler canceled with requestScheduledAlarm.; scheduledTime = 1796136240.304s; localAlarmState.orDefault(kj::UNIX_EPOCH) = 0ns; actorId = 75d682729df844ce91b6afbd8abae8226a20d19e03aa2c0e14dccd046a918982\n";
const OVERDUE = "NOSENTRY SQLite alarm overdue, running despite AlarmManager mismatch; scheduledTime = 1796142778.778s; localAlarmTime = 1796142778.825s; currentTime = 1796142778.862870873s; actorId = b2bf2d2bb91e34110e93fb72f4c4c39e215d96f430d07b4d238a60911efd4a5c\n";

// A push attempt to hooks.example.com without DNS, as workerd 1.20260426.1 logs it (each its own write).
const DNS_FAILED = "e = kj/async-io-unix.c++:1298: failed: DNS lookup failed.; params.host = hooks.example.com; params.service = ; gai_strerror(status) = Name or service not known\n";
const DNS_STACK = "stack: /x/bin/workerd@51f50be /x/bin/workerd@2fa2d76; sentryErrorContext = jsgInternalError\n";
const FETCH_UNCAUGHT = "uncaught exception; source = Uncaught (in promise); stack = Error: internal error; reference = 7318rdj1kmm9e198381a4u60\n";
const FETCH_INTERNAL = "uncaught exception; exception = workerd/jsg/_virtual_includes/iterator/workerd/jsg/value.h:1480: failed: jsg.Error: internal error; reference = 7318rdj1kmm9e198381a4u60\n";

describe("workerd noise", () => {
  it("drops a failed DNS lookup of an example host and the internal-error lines workerd prints after it, never those lines alone", () => {
    let after = false;
    for (const w of [DNS_FAILED, DNS_STACK, DNS_FAILED, DNS_STACK, FETCH_UNCAUGHT, FETCH_INTERNAL, STACK]) {
      expect(isWorkerdNoise(w, after), w).toBe(true);
      after = true;
    }
    expect(isWorkerdNoise(FETCH_UNCAUGHT)).toBe(false); // an uncaught internal error with no DNS failure before it shows
    expect(isWorkerdNoise(FETCH_INTERNAL)).toBe(false);
    expect(isWorkerdNoise(DNS_FAILED.replace("hooks.example.com", "hooks.acme.io"))).toBe(false); // only RFC 2606 example hosts
  });


  it("drops the known lines, alone or together, and a native stack right after one", () => {
    for (const line of [PEER_DISCONNECTED, EVICTED, RESTART, ALARM, OVERDUE, TEARDOWN]) expect(isWorkerdNoise(line), line).toBe(true);
    expect(isWorkerdNoise(EVICTED + STACK)).toBe(true);
    expect(isWorkerdNoise(STACK, true)).toBe(true);
  });

  it("keeps everything else: other exceptions, another abort reason, a stack after a real error, our own logs", () => {
    for (const text of [
      "exception = workerd/api/web-socket.c++:821: disconnected: WebSocket closed with an error\n",
      "uncaught exception; exception = workerd/api/actor-state.c++:1142: failed: broken.outputGateBroken; jsg.Error: SQLITE_NOMEM\n",
      "uncaught exception; exception = workerd/io/worker.c++:2000: failed: jsg.Error: out of memory\n" + STACK,
      STACK,
      "Error: boom\n    at Partition.append (objects/partition/Partition.ts:10:3)\n",
      PEER_DISCONNECTED + "Error: boom\n",
      TEARDOWN + "    at Partition.alarm (objects/partition/Partition.ts:10:3)\n", // a frame of ours: not only the harness
      "uncaught exception; source = Uncaught (in promise); stack = Error: boom\n    at work/x/node_modules/vitest/dist/chunks/init.js:1:2\n",
      "",
    ]) expect(isWorkerdNoise(text), text).toBe(false);
  });

  it("installed on a stream: noise is swallowed (callbacks still called), the rest is written unchanged", async () => {
    const stream = new PassThrough() as unknown as NodeJS.WriteStream;
    let out = "";
    (stream as unknown as PassThrough).on("data", (d) => (out += d));
    installWorkerdNoiseFilter(stream);
    installWorkerdNoiseFilter(stream); // idempotent: one filter
    await new Promise<void>((r) => stream.write(PEER_DISCONNECTED, () => r()));
    stream.write(EVICTED);
    stream.write(STACK);
    stream.write("real error\n");
    stream.write(STACK); // after a real line: kept
    stream.write(Buffer.from(ALARM));
    await new Promise((r) => setImmediate(r));
    expect(out).toBe("real error\n" + STACK);
  });
});

describe("expected console messages", () => {
  it("the open-mode warning from a workers-pool test, nothing of the kind elsewhere", () => {
    expect(isExpectedConsoleLog(OPEN_MODE_LOG + "\n", "test/workers/mortar/session.test.ts")).toBe(true);
    expect(isExpectedConsoleLog(OPEN_MODE_LOG, "test/workers/telemetry/operator.test.ts")).toBe(true);
    expect(isExpectedConsoleLog(OPEN_MODE_LOG, "test/e2e/cli.test.ts")).toBe(false);
    expect(isExpectedConsoleLog(OPEN_MODE_LOG, "")).toBe(false);
  });

  it("a failure a test provokes is dropped only in that test file and only with its exact text", () => {
    const embed = 'agent registry: embedding "pay" with workers-ai:@cf/baai/bge-m3 failed; retried at the next semantic DISCOVER: EmbedderError: Workers AI @cf/baai/bge-m3 failed: upstream 503\n';
    expect(isExpectedConsoleLog(embed, "test/workers/agents/agents-embedders.test.ts")).toBe(true);
    expect(isExpectedConsoleLog(embed, "test/workers/agents/agents-search.test.ts")).toBe(false);
    expect(isExpectedConsoleLog(embed.replace("upstream 503", "timeout"), "test/workers/agents/agents-embedders.test.ts")).toBe(false);
    expect(isExpectedConsoleLog("UsageAggregator: malformed report: no must be a positive integer", "test/workers/telemetry/pipeline.test.ts")).toBe(true);
    expect(isExpectedConsoleLog("UsageAggregator: malformed report: no must be a positive integer", "test/workers/telemetry/operator.test.ts")).toBe(false);
    expect(isExpectedConsoleLog("NatsSession: closing connection after internal error", "test/workers/nats/nats-session.test.ts")).toBe(false);
  });
});
