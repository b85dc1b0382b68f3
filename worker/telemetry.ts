/**
 * Counts of the Worker itself, per tenant, kept in the isolate's memory
 * (objects/usage/memory-meter.ts) and reported to each tenant's
 * UsageAggregator like every other reporter (docs/operations.md): mq9 over
 * HTTP requests by verb and outcome, request and reply body bytes, and the
 * Worker requests a tenant's callers made
 * (`mortarmq_tenant_worker_requests_total`, docs/tenants.md "What a tenant
 * costs").
 *
 * - reporter id `worker:<random uuid>` per isolate;
 * - a Worker has no storage and no timers outliving a request, so reports
 *   ride on requests: after a request, when the last report of the isolate
 *   is at least one flush interval old, one is sent in `waitUntil`; the
 *   operator endpoints (/metrics, /stats, usage) flush first.
 *
 * Bound: counts of an isolate that receives no further request stay in its
 * memory until it is evicted, when they are lost. Only requests and HTTP
 * body bytes are counted here; messages and their bytes are counted by the
 * Mailbox objects, durably.
 */
import { MemoryMeter, type SendReport } from "../objects/usage/memory-meter";
import { series } from "../objects/usage/catalog";

export { MemoryMeter as IsolateMeter, type SendReport };

/** The isolate's meter (module state: one per isolate). */
export const isolateMeter = new MemoryMeter();

/** `mortarmq_tenant_worker_requests_total`: one per HTTP request (or WebSocket upgrade) the Worker served for a tenant. */
export const WORKER_REQUESTS = series("mortarmq_tenant_worker_requests_total");
