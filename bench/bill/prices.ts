/**
 * Cloudflare's price list, the one table the bill and census benches price
 * units with (DESIGN.md §10). Paid plan, beyond the monthly included amounts
 * (which a hosted broker's volume exhausts early in the month).
 *
 * Sources (cloudflare/cloudflare-docs, read 2026-12-04):
 * - Durable Objects requests and duration:
 *   https://developers.cloudflare.com/durable-objects/platform/pricing/
 *   (src/content/partials/workers/durable_objects_pricing.mdx): requests
 *   $0.15/M — HTTP requests, RPC sessions (every RPC method call on a stub),
 *   WebSocket messages (incoming, 20:1; outgoing and protocol pings free),
 *   alarm invocations; duration $12.50/M GB-s, billed for 128 MB while the
 *   object is active or idle but unable to hibernate.
 * - SQLite storage: same page, "Storage API billing"
 *   (src/content/partials/workers/storage_api_pricing.mdx): rows read
 *   $0.001/M, rows written $1.00/M; KV-style get/put/delete/list are billed as
 *   rows read/written; each `setAlarm` is billed as one row written.
 * - Workers Standard: https://developers.cloudflare.com/workers/platform/pricing/
 *   requests $0.30/M, CPU $0.02/M CPU ms.
 * - Queues: https://developers.cloudflare.com/queues/platform/pricing/
 *   (src/content/partials/workers/queues_pricing.mdx): $0.40/M operations,
 *   "in most cases, it takes 3 operations to deliver a message: 1 write, 1
 *   read, and 1 delete" ⇒ $1.20 per million messages.
 */

/** USD prices. */
export const PRICES = {
  checked: "2026-12-04",
  sources: [
    "https://developers.cloudflare.com/durable-objects/platform/pricing/",
    "https://developers.cloudflare.com/workers/platform/pricing/",
    "https://developers.cloudflare.com/queues/platform/pricing/",
  ],
  /** $ per million Durable Object requests (RPC calls, fetches, alarms; WebSocket messages after the 20:1 ratio). */
  doRequestsPerM: 0.15,
  /** Incoming WebSocket messages billed as one request. */
  wsMessagesPerRequest: 20,
  /** $ per million SQLite rows written (setAlarm: one row). */
  rowsWrittenPerM: 1.0,
  /** $ per million SQLite rows read. */
  rowsReadPerM: 0.001,
  /** $ per million GB-s of Durable Object duration. */
  durationPerMGBs: 12.5,
  /** GB a Durable Object is billed for while resident (128 MB). */
  durationGB: 0.128,
  /** $ per million Worker requests. */
  workerRequestsPerM: 0.3,
  /** $ per million Worker CPU ms. */
  cpuPerMms: 0.02,
  /** $ per million Queues operations. */
  queuesOpsPerM: 0.4,
  /** Queues operations per message delivered (write, read, delete). */
  queuesOpsPerMessage: 3,
} as const;

/** Cloudflare Queues, $ per million messages: the anchor every workload is compared with ($1.20). */
export const QUEUES_PER_M_MESSAGES = PRICES.queuesOpsPerM * PRICES.queuesOpsPerMessage;

/** Billable units per message (or per minute, per hour: any common denominator). */
export interface UnitRates {
  /** Durable Object requests as billed (WebSocket messages already divided by 20). */
  doRequests: number;
  workerRequests: number;
  rowsWritten: number;
  rowsRead: number;
}

/** The $ of each unit and their sum, for `units` per message, in $ per million messages. */
export interface PricedRates {
  doRequests: number;
  workerRequests: number;
  rowsWritten: number;
  rowsRead: number;
  total: number;
  /** total ÷ Queues' $1.20 per million messages. */
  vsQueues: number;
}

/** Prices units per message as $ per million messages (CPU and duration are not in it: see the bill suite). */
export function pricePerMillion(units: UnitRates): PricedRates {
  const doRequests = units.doRequests * PRICES.doRequestsPerM;
  const workerRequests = units.workerRequests * PRICES.workerRequestsPerM;
  const rowsWritten = units.rowsWritten * PRICES.rowsWrittenPerM;
  const rowsRead = units.rowsRead * PRICES.rowsReadPerM;
  const total = doRequests + workerRequests + rowsWritten + rowsRead;
  return { doRequests, workerRequests, rowsWritten, rowsRead, total, vsQueues: total / QUEUES_PER_M_MESSAGES };
}

/** $ per hour for one object that stays resident (cannot hibernate): 3600 s × 128 MB at the duration price. */
export function residentDollarsPerHour(objects = 1): number {
  return (objects * 3600 * PRICES.durationGB * PRICES.durationPerMGBs) / 1e6;
}
