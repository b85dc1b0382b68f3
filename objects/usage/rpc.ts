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
  /** Highest stored bytes (MortarMQ + mq9) seen during the hour. */
  storage_bytes: number;
}
