/**
 * What the suites that compare two local brokers on mq9 (launchers,
 * perf-ab) share: the workload's constants, preparing a broker for it (the
 * mailboxes and a NATS connection through its TCP bridge) and the HTTP
 * request rate of one slice.
 */
import { connect, type NatsConnection } from "nats";
import type { LocalBroker } from "../client/local/broker";
import { httpCaller, type HttpCaller } from "./http";
import { timeit } from "./stats";

/** Requests in flight per slice. */
export const CONCURRENCY = 32;
/** Mailboxes the "100 mailboxes" case spreads its SENDs over. */
export const MAILBOXES = 100;
/** The SEND payload: 64 bytes of JSON. */
export const PAYLOAD = JSON.stringify({ text: "x".repeat(48) });
/** The NATS case's subject (a mailbox with TTL 0: never expires). */
export const SUBJECT = "$mq9.AI.MSG.SEND.bench.inbox";

/** A broker with its clients: HTTP, NATS through its bridge, and the MAILBOXES mailbox addresses. */
export interface Mq9Clients {
  http: HttpCaller;
  nats: NatsConnection;
  boxes: string[];
}

/** Creates the workload's mailboxes (`<prefix>.0` … and `bench.inbox`) on `broker` and connects its clients. */
export async function prepareMq9(broker: LocalBroker, prefix: string): Promise<Mq9Clients> {
  const http = httpCaller(broker.port, CONCURRENCY * 2);
  const boxes = Array.from({ length: MAILBOXES }, (_, i) => `${prefix}.${i}`);
  for (const b of boxes) await http.call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", { body: JSON.stringify({ name: b, ttl: 3600 }) });
  await http.call("POST", "/mq9/$mq9.AI.MAILBOX.CREATE", { body: JSON.stringify({ name: "bench.inbox", ttl: 0 }) });
  const nats = await connect({ servers: `127.0.0.1:${broker.bridges.nats}` });
  return { http, nats, boxes };
}

/** One HTTP slice: requests per second, requests done, and failed ones (counted, not retried, not in the rate) with the first error's text. */
export interface HttpRate {
  rate: number;
  ops: number;
  failed?: number;
  firstError?: string;
}

/** Runs `op` with CONCURRENCY in flight for `ms`. */
export async function httpRate(ms: number, op: () => Promise<unknown>): Promise<HttpRate> {
  let failed = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const r = await timeit(ms, CONCURRENCY, async () => {
    await op().catch((e: Error) => {
      failed++;
      firstError ??= e.message.slice(0, 200);
    });
  });
  const ok = r.count - failed;
  return { rate: ok / ((performance.now() - start) / 1000), ops: ok, ...(failed > 0 ? { failed, firstError } : {}) };
}
