/**
 * Errors a MortarClient raises. Every one is a MortarClientError: a broker
 * ERR keeps its registry code, name and "what the client should do" action
 * (wire/mortar/errors.ts, docs/errors.md); connection failures use code 0
 * with the name CONNECTION_CLOSED and the action `reconnect`.
 */
import { MortarError, type ClientAction } from "../../wire/mortar/errors";
import type { ErrFrame } from "../../wire/mortar/frames";

/** Where the error came from. */
export type ErrorSource =
  /** An ERR frame sent by the broker. */
  | "broker"
  /** The connection failed or closed before an answer arrived. */
  | "connection"
  /** The broker sent something this client cannot interpret. */
  | "protocol";

export class MortarClientError extends MortarError {
  readonly source: ErrorSource;
  private readonly localAction: ClientAction | undefined;

  /**
   * @param code registry code (0 for local failures)
   * @param message diagnostic text
   * @param requestOp op of the request it answers (0 when none)
   */
  constructor(code: number, message: string, requestOp: number, source: ErrorSource, local?: { name: string; action: ClientAction }) {
    super(code, message, requestOp);
    this.source = source;
    this.localAction = local?.action;
    if (local) Object.defineProperty(this, "name", { value: local.name });
  }

  /** What the client should do (the registry's column for broker errors). */
  override get action(): ClientAction {
    return this.localAction ?? super.action;
  }

  /** True when resending the same request later may succeed. */
  get retryable(): boolean {
    return this.action === "retry-with-backoff";
  }

  /** The error an ERR frame carries. */
  static fromErr(f: ErrFrame): MortarClientError {
    const m = MortarError.fromFrame(f);
    return new MortarClientError(m.code, m.message, m.requestOp, "broker");
  }

  /** The connection closed (or failed) before the request was answered. */
  static closed(reason: string, requestOp = 0): MortarClientError {
    return new MortarClientError(0, reason, requestOp, "connection", { name: "CONNECTION_CLOSED", action: "reconnect" });
  }

  /** The broker sent something unexpected (the client closes the connection). */
  static protocol(message: string, requestOp = 0): MortarClientError {
    return new MortarClientError(0, message, requestOp, "protocol", { name: "PROTOCOL_VIOLATION", action: "reconnect" });
  }
}
