/**
 * The series of one mq9 request for `mortarmq_mq9_requests_total` (verb,
 * outcome, transport), shared by the HTTP and NATS transports and the MCP
 * tools (docs/operations.md).
 */
import { parseMq9Subject } from "../../wire/mq9";
import { series } from "../usage/catalog";
import type { Mq9Reply } from "./reply";

/** Outcome label by HTTP status when the reply names no error kind (agent replies). */
const STATUS_OUTCOME: Readonly<Record<number, string>> = {
  400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict", 413: "payload_too_large",
  429: "too_many_requests", 500: "internal", 503: "unavailable",
};

/** Series by subject, then by `outcome|transport`: a connection sends to the same few subjects over and over. */
const cache = new Map<string, Map<string, string>>();
/** Subjects kept before the cache starts over (subjects carry mail addresses: unbounded). */
const CACHE_MAX = 4096;

/**
 * `verb`: the subject's kind in lower case with `_` (`msg_send`,
 * `mailbox_create`, `agent_discover`), `unknown` for a subject that is not
 * an mq9 subject; `outcome`: `ok` or the error kind. Cached per subject
 * (parsing the subject again for every request was a visible part of a
 * pipelined SEND's CPU).
 */
export function mq9RequestSeries(subject: string, reply: Mq9Reply, transport: "http" | "nats" | "mcp"): string {
  const outcome = reply.status === 200 ? "ok" : (reply.code ?? STATUS_OUTCOME[reply.status] ?? `http_${reply.status}`);
  const k = outcome === "ok" ? transport : `${outcome}|${transport}`;
  let bySubject = cache.get(subject);
  let s = bySubject?.get(k);
  if (s === undefined) {
    let verb = "unknown";
    try {
      verb = parseMq9Subject(subject).kind.toLowerCase().replaceAll(".", "_");
    } catch {
      /* not an mq9 subject */
    }
    s = series("mortarmq_mq9_requests_total", { verb, outcome, transport });
    if (!bySubject) {
      if (cache.size >= CACHE_MAX) cache.clear();
      cache.set(subject, (bySubject = new Map()));
    }
    bySubject.set(k, s);
  }
  return s;
}
