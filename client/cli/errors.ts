/**
 * How the CLI reports failures: every error becomes an `ErrorReport` (the
 * registry name and code for MortarMQ errors, the mq9 `error` string and HTTP
 * status for mq9, a CLI name for local problems) with what to do, printed as
 * two short lines or as `{"error": report}` with `--json`. Never a stack trace.
 *
 * Every hint is chosen here, in one place, so that the commands agree: a
 * registry error gets its CLI hint (REGISTRY_HINTS, a command may have its
 * own: COMMAND_HINTS), else the CLI phrasing of its registry action
 * (ACTION_HINTS, derived from wire/mortar/errors.ts); a USAGE error without
 * its own hint points to the command's `--help`.
 */
import { Op } from "../../wire/mortar/constants";
import { ErrorCode, formatErrorCode, type ClientAction } from "../../wire/mortar/errors";
import { MortarClientError } from "../sdk/errors";

/** One failure as the CLI shows it. */
export interface ErrorReport {
  /** Registry name (UNKNOWN_TOPIC, …), `MQ9_ERROR`, or a CLI name (BROKER_UNREACHABLE, USAGE, …). */
  name: string;
  /** Registry code for MortarMQ errors (e.g. 8), else null. */
  code: number | null;
  /** HTTP status for HTTP failures (mq9, /stats), else null. */
  status: number | null;
  /** What went wrong. */
  message: string;
  /** The registry's client action for MortarMQ errors, else null. */
  action: ClientAction | null;
  /** What the user should do next. */
  hint: string;
}

/** A failure the CLI detected or translated itself; carries its report fields. */
export class CliError extends Error {
  override readonly name: string;
  readonly hint: string;
  readonly status: number | null;

  /**
   * @param name upper-case error name shown first (e.g. "STATS_NOT_SERVED")
   * @param message what went wrong
   * @param hint what to do next ("" for none)
   * @param status HTTP status when the failure was an HTTP answer
   */
  constructor(name: string, message: string, hint = "", status: number | null = null) {
    super(message);
    this.name = name;
    this.hint = hint;
    this.status = status;
  }
}

/** Where an error was met: the command path as typed after `mortarmq` (e.g. "topics delete"; "" for the program itself). */
export interface ErrorContext {
  command: string;
}

/**
 * A usage error (bad flag value, missing input): exit 1. Without `hint` the
 * report points to the command's help (`see \`mortarmq pub --help\``).
 */
export function usageError(message: string, hint = ""): CliError {
  return new CliError("USAGE", message, hint);
}

/** The hint of a usage error: the help of `command` (a path such as "topics create"; "" = the program). */
export function helpHint(command: string): string {
  return `see \`mortarmq ${command ? command + " " : ""}--help\``;
}

/** The one UNKNOWN_TOPIC error of the CLI, for a name the broker does not know (lookup by DECLARE, or absent from /stats). */
export function unknownTopic(name: string): MortarClientError {
  return new MortarClientError(ErrorCode.UNKNOWN_TOPIC, `topic "${name}" does not exist`, Op.DECLARE, "broker");
}

/** The one-line failure for a broker that does not answer at `url`. */
export function unreachable(url: string, cause: string): CliError {
  cause = /\b(E[A-Z]{3,}|UND_ERR_[A-Z_]+)\b/.exec(cause)?.[1] ?? cause; // "connect ECONNREFUSED 127.0.0.1:8787" → ECONNREFUSED
  return new CliError(
    "BROKER_UNREACHABLE",
    `cannot reach the broker at ${url}${cause ? ` (${cause})` : ""}; is \`npm start\` running?`,
    "",
  );
}

/** Hints for registry errors a CLI user meets, phrased for the command line. */
const REGISTRY_HINTS: Readonly<Record<string, string>> = {
  UNKNOWN_TOPIC: "check the name (mortarmq topics list shows this tenant's topics), or create it: mortarmq topics create <name> --partitions <n>",
  TOPIC_DELETED: "the topic was deleted; create it again with mortarmq topics create",
  PARTITION_COUNT_MISMATCH: "the topic exists with another partition count: use that count, or delete the topic first",
  TOPIC_NAME_RESERVED: "names ending in .dlq are the dead-letter twins of existing topics; pick another name",
  INVALID_TOPIC_NAME: "topic names are 1–255 bytes of UTF-8",
  INVALID_PARTITION_COUNT: "--partitions must be 1..65535",
  PARTITION_OUT_OF_RANGE: "--partition must be below the topic's partition count (see mortarmq topics describe)",
  KEY_TOO_LONG: "keys are at most 255 bytes",
  VALUE_TOO_LONG: "values are at most 16 MiB − 1 KiB (16776192 bytes)",
  AUTH_FAILED: "pass a valid token with --token or MORTARMQ_TOKEN",
  PRODUCER_SEQ_OUT_OF_WINDOW: "the producer sequence is older than the dedupe window; publish with a new --producer-id",
  PARTITION_FULL: "the partition holds its topic's retention limit and the topic refuses new messages (discard new): raise the limit or switch to discard old with mortarmq topics alter <name>",
  PERMISSION_DENIED: "the token's scopes do not allow the operation the message names (docs/tenants.md \"Permissions\"); pub and sub first look the topic up, which needs mortar.publish, mortar.consume or mortar.admin on it: ask the operator for a token with that scope (mortarmq admin tokens scopes)",
  UNSUPPORTED_BY_BROKER: "the broker does not speak this extension: upgrade the broker",
};

/** Hints of registry errors that read differently in one command (keyed by command path, then error name). */
const COMMAND_HINTS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "topics delete": { UNKNOWN_TOPIC: "nothing to delete: mortarmq topics list shows this tenant's topics" },
};

/**
 * The registry's client actions (wire/mortar/errors.ts CLIENT_ACTIONS, which
 * speak to SDK authors) phrased for someone at the command line; used for
 * registry errors without their own hint.
 */
const ACTION_HINTS: Readonly<Record<ClientAction, string>> = {
  "retry-with-backoff": "a transient condition: run the command again in a moment",
  reconnect: "the broker closed the connection: run the command again",
  "fix-request": "the broker refuses the request as given: change the arguments",
  "give-up": "the command cannot recover from this: check the broker's configuration and logs",
  "refresh-metadata": "the topic changed meanwhile: run the command again (mortarmq topics list shows the current topics)",
  "refresh-assignment": "the group's assignment changed meanwhile: run the command again",
  "rejoin-group": "the consumer left its group meanwhile: run the command again to join it anew",
  "discard-delivery": "the message was reassigned meanwhile: the group redelivers it; run the command again",
};

/**
 * Converts anything thrown by a command into its report. `url` names the
 * broker for connection failures; `ctx` (the command met it in) picks the
 * command's own hints and the `--help` a usage error points to.
 */
export function describeError(e: unknown, url: string, ctx?: ErrorContext): ErrorReport {
  if (e instanceof MortarClientError) {
    if (e.source === "connection" && e.requestOp === Op.CONNECT && e.code === 0) {
      return describeError(unreachable(url, e.message), url, ctx);
    }
    const action = e.action;
    return {
      name: e.name,
      code: e.code === 0 ? null : e.code,
      status: null,
      message: e.message,
      action,
      hint: (ctx && COMMAND_HINTS[ctx.command]?.[e.name]) ?? REGISTRY_HINTS[e.name] ?? ACTION_HINTS[action],
    };
  }
  if (e instanceof CliError) {
    const hint = e.name === "USAGE" && e.hint === "" ? helpHint(ctx?.command ?? "") : e.hint;
    return { name: e.name, code: null, status: e.status, message: e.message, action: null, hint };
  }
  const message = e instanceof Error ? e.message : String(e);
  return { name: "ERROR", code: null, status: null, message, action: null, hint: "" };
}

/** `UNKNOWN_TOPIC (0x0008)`, `MQ9_ERROR (HTTP 404)` or the bare name. */
export function errorTag(r: ErrorReport): string {
  return r.code !== null ? `${r.name} (${formatErrorCode(r.code)})` : r.status !== null ? `${r.name} (HTTP ${r.status})` : r.name;
}

/** The human form of a report: `mortarmq: NAME (0x0008): message` plus an indented hint line. */
export function formatErrorReport(r: ErrorReport): string {
  const tag = errorTag(r);
  const head = r.name === "BROKER_UNREACHABLE" ? `mortarmq: ${r.message}` : `mortarmq: ${tag}: ${r.message}`;
  if (!r.hint) return head + "\n";
  const what = r.action ? `what to do (${r.action}): ${r.hint}` : `what to do: ${r.hint}`;
  return `${head}\n  ${what}\n`;
}
