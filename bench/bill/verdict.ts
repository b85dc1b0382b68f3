/**
 * Issue #26 §2 (f)'s budget for an idle client, as a verdict on one idle
 * run's steady-state figures (pure; test/unit/bill-units.test.ts): per
 * minute, beyond the client's own polls, at most IDLE_BUDGET.requestsPerMinute
 * billed Durable Object requests and IDLE_BUDGET.rowsPerMinute rows written;
 * an empty poll writes no row at the object it polls; every object the
 * client keeps is evicted by the runtime while idle (nothing keeps it
 * resident). The set-up (connecting, first telemetry report) is not part of
 * the steady state: the bench reports it separately, once per connection.
 */

/** The budget (issue #26 §2 (f)). */
export const IDLE_BUDGET = { requestsPerMinute: 2, rowsPerMinute: 2, rowsPerEmptyPoll: 0 } as const;

/** What the verdict needs from an idle run. */
export interface IdleFigures {
  /** Billed Durable Object requests per minute (WebSocket messages at 20:1), in the steady state. */
  doRequestsPerMinute: number;
  /** Rows written per minute, every object, in the steady state. */
  rowsWrittenPerMinute: number;
  /** The client's own polls per minute (each one Durable Object request at the polled object); undefined: it does not poll. */
  pollsPerMinute?: number;
  /** Rows written by the polled object (the Mailbox) per minute; undefined: it does not poll. */
  polledObjectRowsPerMinute?: number;
  /** Per object the client keeps: whether the runtime evicted it while idle. */
  objects: { kind: string; evictedWhileIdle: boolean; couldHibernate: boolean }[];
}

/** The verdict. */
export interface IdleVerdict {
  /** Billed DO requests per minute beyond the client's own polls. */
  requestsBeyondPolls: number;
  rowsWrittenPerMinute: number;
  /** Rows the polled object wrote per empty poll; null when the client does not poll. */
  rowsPerEmptyPoll: number | null;
  /** Every object the client keeps was evicted while idle and has nothing keeping it resident. */
  evictedWhileIdle: boolean;
  /** All of the above within the budget. */
  met: boolean;
  /** What is over budget, in words (empty when met). */
  over: string[];
}

const r2 = (x: number) => Math.round(x * 100) / 100;

/** The budget check of one idle client's steady state. */
export function idleVerdict(f: IdleFigures): IdleVerdict {
  const polls = f.pollsPerMinute ?? 0;
  const requestsBeyondPolls = r2(Math.max(0, f.doRequestsPerMinute - polls));
  const rowsWrittenPerMinute = r2(f.rowsWrittenPerMinute);
  const rowsPerEmptyPoll = f.pollsPerMinute === undefined ? null : r2((f.polledObjectRowsPerMinute ?? 0) / Math.max(polls, 1e-9));
  const evictedWhileIdle = f.objects.length > 0 && f.objects.every((o) => o.evictedWhileIdle && o.couldHibernate);
  const over: string[] = [];
  if (requestsBeyondPolls > IDLE_BUDGET.requestsPerMinute) over.push(`${requestsBeyondPolls} requests/min beyond own polls (budget ${IDLE_BUDGET.requestsPerMinute})`);
  if (rowsWrittenPerMinute > IDLE_BUDGET.rowsPerMinute) over.push(`${rowsWrittenPerMinute} rows written/min (budget ${IDLE_BUDGET.rowsPerMinute})`);
  if (rowsPerEmptyPoll !== null && rowsPerEmptyPoll > IDLE_BUDGET.rowsPerEmptyPoll) over.push(`${rowsPerEmptyPoll} rows per empty poll (budget 0)`);
  for (const o of f.objects) {
    if (!o.couldHibernate) over.push(`${o.kind} kept resident`);
    else if (!o.evictedWhileIdle) over.push(`${o.kind} not evicted while idle`);
  }
  if (f.objects.length === 0) over.push("no object to watch");
  return { requestsBeyondPolls, rowsWrittenPerMinute, rowsPerEmptyPoll, evictedWhileIdle, met: over.length === 0, over };
}

/** One line for the bench's table: "met" or what is over. */
export function verdictText(v: IdleVerdict): string {
  return v.met ? "(f) met" : `(f) NOT met: ${v.over.join("; ")}`;
}
