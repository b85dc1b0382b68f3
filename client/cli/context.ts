/**
 * What every `mortarmq` command shares: the global options (`--url` /
 * MORTARMQ_URL, `--token` / MORTARMQ_TOKEN, `--json`), the action wrapper
 * that turns any failure into one clear stderr report and exit status 1, and
 * the output helpers (tables by default, JSON with `--json`).
 */
import { Help, Option, type Command } from "commander";
import { describeError, formatErrorReport } from "./errors";

/** Broker URL used when neither `--url` nor MORTARMQ_URL is given. */
export const DEFAULT_URL = "http://127.0.0.1:8787";

/** The global options, as every command sees them. */
export interface GlobalOptions {
  /** Broker base URL (http(s)://, ws(s):// or tcp:// for MortarMQ commands). */
  url: string;
  /** Bearer / CONNECT token; undefined for an open broker. */
  token?: string;
  /** Machine output: one JSON document on stdout (errors as JSON on stderr). */
  json: boolean;
}

/**
 * Adds the global options to the root program (they are accepted before or
 * after any subcommand) and the help settings every subcommand inherits
 * (register subcommands after this): global options listed in each
 * command's help, and `(required)` after a mandatory option (commander's
 * requiredOption) — commander itself does not mark them.
 */
export function addGlobalOptions(program: Command): void {
  program
    .addOption(new Option("--url <url>", "broker URL").env("MORTARMQ_URL").default(DEFAULT_URL))
    .addOption(new Option("--token <token>", "auth token (Bearer / CONNECT token)").env("MORTARMQ_TOKEN"))
    .addOption(new Option("--json", "machine-readable JSON output (errors as JSON on stderr)"))
    .configureHelp({
      showGlobalOptions: true,
      // wrap descriptions also next to long terms (`register [options] [card]`): commander's default
      // leaves a description column narrower than 40 unwrapped, past 80 columns
      minWidthToWrap: 20,
      optionDescription(option: Option): string {
        const text = Help.prototype.optionDescription.call(this, option);
        return option.mandatory ? `${text} (required)` : text;
      },
    });
}

/** The global options for `cmd` (a subcommand's action `this`, or the command passed last to the action). */
export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals<{ url?: string; token?: string; json?: boolean }>();
  const token = o.token?.trim();
  return { url: o.url ?? DEFAULT_URL, token: token ? token : undefined, json: o.json === true };
}

/** The path of `cmd` as typed after `mortarmq` ("topics delete"; "" for the program itself). */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/**
 * Wraps a command action: runs it; on any thrown error prints one report to
 * stderr (JSON with `--json`; hints for this command: errors.ts) and sets
 * exit status 1. The action itself may also set `process.exitCode` (e.g. a
 * partial `pub` failure).
 */
export function action<A extends unknown[]>(
  fn: (g: GlobalOptions, ...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const cmd = args[args.length - 1] as Command;
    let g: GlobalOptions = { url: DEFAULT_URL, json: process.argv.includes("--json") };
    try {
      g = globals(cmd);
      await fn(g, ...args);
    } catch (e) {
      const report = describeError(e, g.url, { command: commandPath(cmd) });
      process.stderr.write(g.json ? JSON.stringify({ error: report }) + "\n" : formatErrorReport(report));
      process.exitCode = 1;
    }
  };
}

/** Prints `value` as one JSON document on stdout (bigints as decimal strings). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 2) + "\n");
}

/** Prints text on stdout, adding the final newline. */
export function printLine(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : text + "\n");
}

/** Prints `reply` as JSON with `--json`, else the text `human()` returns. */
export function output(g: GlobalOptions, reply: unknown, human: () => string): void {
  if (g.json) printJson(reply);
  else printLine(human());
}
