/**
 * Keeps a green `npm test` quiet (docs/testing.md "Known noise in the test
 * output"): the lines the test harness itself causes and that say nothing
 * about the product are dropped — each matched exactly, so every other
 * line, and every real error, still shows.
 *
 * Two sources:
 * - workerd's own log lines from the workers pool, which
 *   @cloudflare/vitest-pool-workers writes straight to this process's
 *   stdout or stderr (its `handleStructuredLogs`, which already drops a few
 *   such messages of its own; a line that is not structured JSON counts as
 *   level "log" and goes to stdout): `isWorkerdNoise` +
 *   `installWorkerdNoiseFilter`, on both streams.
 * - console output of the Worker and its Durable Objects that the tests
 *   provoke on purpose (open mode; failure paths that are logged):
 *   `isExpectedConsoleLog`, used as vitest's `onConsoleLog`.
 * Pure matching apart from the one install function; loaded by vitest.config.ts.
 */

/** Reasons our workers-pool tests pass to `ctx.abort(reason)` to evict or restart an object. */
export const TEST_ABORT_REASONS = ["evicted by the test", "restart"] as const;

const WORKERD_NOISE: readonly RegExp[] = [
  // A WebSocket the test (or the object) closed while workerd was still reading or writing it.
  /^exception = workerd\/api\/web-socket\.c\+\+:\d+: disconnected: WebSocket peer disconnected$/,
  // The object a test aborted on purpose (runInDurableObject(…, (_o, ctx) => ctx.abort(reason))).
  new RegExp(`^uncaught exception; exception = workerd/api/actor-state\\.c\\+\\+:\\d+: failed: broken\\.outputGateBroken; jsg\\.Error: (${TEST_ABORT_REASONS.join("|")})$`),
  // docs/testing.md "EnvironmentTeardownError": an object's event after its test file ended; vitest.config.ts's
  // onUnhandledError handles it when vitest sees it, workerd logs it as an object's unhandled rejection.
  /^uncaught exception; source = Uncaught \(in promise\); stack = EnvironmentTeardownError: \[vitest-worker\]: Closing rpc while "[^"]+" was pending$/,
  // An alarm rescheduled while its handler ran (e.g. the object was evicted by a test meanwhile): workerd's internal note.
  /^NOSENTRY SQLite alarm handler canceled with requestScheduledAlarm\.; scheduledTime = [\d.]+s; localAlarmState\.orDefault\(kj::UNIX_EPOCH\) = \d+ns; actorId = [0-9a-f]+$/,
  // An alarm moved a few ms later while it was already due (a job re-armed for "now" from its own run): workerd runs it anyway and says so.
  /^NOSENTRY SQLite alarm overdue, running despite AlarmManager mismatch; scheduledTime = [\d.]+s; localAlarmTime = [\d.]+s; currentTime = [\d.]+s; actorId = [0-9a-f]+$/,
  // A push attempt to an RFC 2606 example host the tests use (hooks.example.com) where there is no DNS (this sandbox, CI):
  // workerd logs the failed lookup although the caller handles the rejected fetch.
  /^e = kj\/async-io-unix\.c\+\+:\d+: failed: DNS lookup failed\.; params\.host = [\w.-]*\.example\.(?:com|org|net); params\.service = \w*; gai_strerror\(status\) = Name or service not known$/,
];

/**
 * Lines that are noise only right after a noise line: a native stack of
 * workerd itself (`stack: …/workerd@2f201f0 …`, possibly with its error
 * context), a JavaScript frame inside vitest (`    at
 * …/node_modules/vitest/dist/…:133:12`, `    at Array.map (<anonymous>)`), or
 * workerd's report of the failed DNS lookup's fetch as an uncaught internal
 * error (workerd logs it even when the fetch's rejection is handled: measured
 * with `fetch(url).catch(() => {})` alone).
 */
const NOISE_STACK: readonly RegExp[] = [
  /^stack:( \S*workerd@[0-9a-f]+)+(?:; sentryErrorContext = jsgInternalError(?:; wdErrId = \w+)?)?$/,
  /^uncaught exception; source = Uncaught \(in promise\); stack = Error: internal error; reference = \w+$/,
  /^uncaught exception; exception = workerd\/jsg\/\S*value\.h:\d+: failed: jsg\.Error: internal error; reference = \w+$/,
  /^ {4}at (?:[\w$.<>]+ \()?(?:\S*node_modules\/vitest\/dist\/\S+:\d+:\d+|<anonymous>)\)?$/,
];

/**
 * Whether `text` (one write: one or more lines) is only known workerd
 * harness noise: every line is a noise line, or a stack line (NOISE_STACK)
 * following one (`afterNoise`: the previous write was noise).
 */
export function isWorkerdNoise(text: string, afterNoise = false): boolean {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  if (lines.length === 0) return false;
  let prevNoise = afterNoise;
  for (const line of lines) {
    const noise = WORKERD_NOISE.some((re) => re.test(line)) || (prevNoise && NOISE_STACK.some((re) => re.test(line)));
    if (!noise) return false;
    prevNoise = true;
  }
  return true;
}

/**
 * Drops workerd noise written to `stream` (see isWorkerdNoise); every other
 * write passes unchanged. Whether the previous write was noise is shared by
 * all filtered streams (a follow-up line may come on the other stream).
 * Idempotent per stream.
 */
export function installWorkerdNoiseFilter(stream: NodeJS.WriteStream): void {
  const marked = stream as NodeJS.WriteStream & { [FILTERED]?: true };
  if (marked[FILTERED]) return;
  marked[FILTERED] = true;
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  stream.write = ((chunk: unknown, ...rest: unknown[]) => {
    const text = typeof chunk === "string" ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString("utf8") : null;
    const noise = text !== null && isWorkerdNoise(text, lastWasNoise);
    lastWasNoise = noise;
    if (!noise) return write(chunk, ...rest);
    const done = rest.find((r) => typeof r === "function") as (() => void) | undefined;
    if (done) queueMicrotask(done);
    return true;
  }) as typeof stream.write;
}

const FILTERED = Symbol.for("mortarmq.workerdNoiseFilter");
/** The last write to any filtered stream was noise (workerd writes a line to stderr and its follow-up to stdout). */
let lastWasNoise = false;

/** One console message the tests cause on purpose: the test file (path from the repository root) and the exact text. */
interface ExpectedLog {
  /** Test file path prefix (a directory ends with "/"). */
  file: string;
  text: RegExp;
}

const EXPECTED_LOGS: readonly ExpectedLog[] = [
  // The Worker's one-time warning in open mode (objects/tenants/auth.ts OPEN_MODE_LOG); the workers projects run open on purpose.
  { file: "test/workers/", text: /^mortarmq: running OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured, every client is tenant "default" \(set AUTH_TOKENS, .*\)$/ },
  // Failing embedders: the tests' fake services answer 503 / HTTP 500 (objects/agents/store.ts).
  { file: "test/workers/agents/agents-embedders.test.ts", text: /^agent registry: embedding "\w+" with (workers-ai:@cf\/baai\/bge-m3|endpoint:bge-m3@models\.local) failed; retried at the next semantic DISCOVER: EmbedderError: (Workers AI @cf\/baai\/bge-m3 failed: upstream 503|embeddings endpoint models\.local answered HTTP 500: model not loaded)$/ },
  // A stored card that is not a JSON object, planted by the test.
  { file: "test/workers/agents/agents-discover-robust.test.ts", text: /^agent registry: stored card \d+ is not a JSON object; left out of DISCOVER$/ },
  // Internal errors the test provokes (a dropped table) are logged with their reference (objects/shared/platform-faults.ts).
  { file: "test/workers/http/internal-errors.test.ts", text: /^(Mailbox|Partition): internal error \(ref [0-9a-f]{8}\): Error: no such table: (messages|log): SQLITE_ERROR/ },
  // The same test drops the registry's table under the groups API and the console's topic pages (worker/admin/groups-api.ts, worker/console/).
  { file: "test/workers/http/internal-errors.test.ts", text: /^(groups API|console API): internal error \(ref [0-9a-f]{8}\): Error: no such table: topics: SQLITE_ERROR/ },
  // An append whose storage write the test makes fail (objects/partition/Partition.ts), logged with its reference.
  { file: "test/workers/mortar/partition.test.ts", text: /^Partition: internal error \(ref [0-9a-f]{8}\): Error: injected storage failure/ },
  // The storage probe the test breaks (no USAGE binding), logged with its reference (worker/admin/health.ts).
  { file: "test/workers/telemetry/operator.test.ts", text: /^\/healthz: internal error \(ref [0-9a-f]{8}\): TypeError: Cannot read properties of undefined \(reading 'get'\)/ },
  // Alarm handlers the test makes fail on purpose (objects/shared/scheduler.ts).
  { file: "test/workers/alarm-scheduler.test.ts", text: /^test alarm: (job|part) step failed \(\d+ in a row, retried in \d+ ms\): Error: step failed \d+$/ },
  // Malformed telemetry reports the test sends (objects/usage/UsageAggregator.ts).
  { file: "test/workers/telemetry/pipeline.test.ts", text: /^UsageAggregator: malformed report: / },
];

/**
 * vitest `onConsoleLog`: false (drop) for a console message a test causes on
 * purpose (EXPECTED_LOGS: that test file, that exact text); undefined (print)
 * for everything else. `file` is the test file's path relative to the
 * repository root ("test/workers/x.test.ts"), "" when unknown.
 */
export function isExpectedConsoleLog(text: string, file: string): boolean {
  const line = text.replace(/\n$/, "");
  return file !== "" && EXPECTED_LOGS.some((e) => (e.file.endsWith("/") ? file.startsWith(e.file) : file === e.file) && e.text.test(line));
}
