/**
 * `mortarmq` command line (commander). Each command group lives in its own
 * module and registers itself on the program. Global options (`--url`,
 * `--token`, `--json`) are defined once on the program (client/cli/context.ts)
 * and accepted before or after any subcommand. `-V` / `--version` prints the
 * version (wire/version.ts, the one the broker reports; tests keep it equal to
 * package.json's). commander's own usage errors (unknown option, missing
 * argument, …) are reported like every other error: one line and one hint
 * pointing to the command's `--help` (docs/cli.md).
 */
import { Command } from "commander";
import { VERSION } from "../../wire/version";
import { addGlobalOptions, commandPath } from "./context";
import { describeError, formatErrorReport, usageError } from "./errors";
import { registerAdmin } from "./admin";
import { registerBridge } from "./bridge";
import { registerDev } from "./dev";
import { registerGroups } from "./groups";
import { registerMq9 } from "./mq9";
import { registerPub } from "./pub";
import { registerSub } from "./sub";
import { registerTopics } from "./topics";

/** Builds the CLI program; exported for tests. */
export function buildProgram(): Command {
  const program = new Command();
  program.name("mortarmq").description("MortarMQ Edge broker CLI").version(VERSION, "-V, --version", "print the version of mortarmq");
  addGlobalOptions(program);
  registerDev(program);
  registerBridge(program);
  registerTopics(program);
  registerGroups(program);
  registerPub(program);
  registerSub(program);
  registerMq9(program);
  registerAdmin(program);
  reportUsageErrors(program);
  return program;
}

/**
 * Makes `cmd` and its subcommands print commander's usage errors as a USAGE
 * report — `mortarmq: USAGE: missing required argument 'topic'` and the hint
 * `see \`mortarmq pub --help\`` (JSON on stderr with `--json`) — instead of
 * the message followed by the whole help text. Exit status stays 1.
 */
function reportUsageErrors(cmd: Command): void {
  cmd.showHelpAfterError(false).configureOutput({
    outputError: (text, write) => {
      const report = describeError(usageError(text.replace(/^error: /, "").trimEnd()), "", { command: commandPath(cmd) });
      write(process.argv.includes("--json") ? JSON.stringify({ error: report }) + "\n" : formatErrorReport(report));
    },
  });
  for (const sub of cmd.commands) reportUsageErrors(sub);
}

/**
 * Runs the CLI with `argv` (as in process.argv); sets the exit code on
 * failure. Commands report their own errors (context.ts `action`); anything
 * else that escapes (e.g. `dev` on a port in use) is reported the same way.
 */
export async function main(argv: string[]): Promise<void> {
  ignoreClosedStdout();
  try {
    await buildProgram().parseAsync(argv);
  } catch (e) {
    const json = argv.includes("--json");
    const report = describeError(e, "");
    process.stderr.write(json ? JSON.stringify({ error: report }) + "\n" : formatErrorReport(report));
    process.exitCode = 1;
  }
}

/**
 * A reader that went away (`mortarmq … | head`) makes writes to stdout fail
 * with EPIPE, which Node raises as an unhandled 'error' event (a stack
 * trace). The output is simply not wanted any more: the error is swallowed
 * and the command finishes (`sub` stops consuming: client/cli/sub.ts).
 */
function ignoreClosedStdout(): void {
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE" || e.code === "ERR_STREAM_DESTROYED") return;
    process.stderr.write(`mortarmq: cannot write to stdout: ${e.message}\n`);
    process.exitCode = 1;
  });
}
