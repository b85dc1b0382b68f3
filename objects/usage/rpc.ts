/**
 * Types of the UsageAggregator RPC surface (objects/usage/UsageAggregator.ts).
 * The report a reporter sends is `UsageReport` (report.ts, the pipeline's data).
 */

/** Answer to `report`. */
export interface ReportAck {
  /** False for a duplicate (already applied) or a malformed report (`error`). */
  applied: boolean;
  error?: string;
}

/** Usage of one tenant-hour (`usage`; `GET /admin/tenants/:id/usage`). */
export interface HourUsage {
  /** Start of the hour, ms since the epoch. */
  hour: number;
  requests: number;
  messages_in: number;
  messages_out: number;
  bytes_in: number;
  bytes_out: number;
  connection_seconds: number;
  /** SQLite rows written by the tenant's objects (issue #26 §3; docs/tenants.md "What a tenant costs"). */
  rows_written: number;
  /** SQLite rows read by the tenant's objects. */
  rows_read: number;
  /** Durable Object requests the tenant's objects received, as billed (WebSocket messages 20:1). */
  do_requests: number;
  /** HTTP requests the Worker served for the tenant (WebSocket upgrades included), billed per request. */
  worker_requests: number;
  /** Highest stored bytes (MortarMQ + mq9) seen during the hour. */
  storage_bytes: number;
}
