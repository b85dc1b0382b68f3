/**
 * `mortarmq` command line (commander). Each command group lives in its own
 * module and registers itself on the program. Global options (`--url`,
 * `--token`, `--json`) are defined once on the program (client/cli/context.ts)
 * and accepted before or after any subcommand.
 */
import { Command } from "commander";
import { registerBridge } from "../bridge/command";
import { addGlobalOptions } from "./context";
import { describeError, formatErrorReport } from "./errors";
import { registerAdmin } from "./admin";
import { registerDev } from "./dev";
import { registerGroups } from "./groups";
import { registerMq9 } from "./mq9";
import { registerPub } from "./pub";
import { registerSub } from "./sub";
import { registerTopics } from "./topics";

/** Builds the CLI program; exported for tests. */
export function buildProgram(): Command {
  const program = new Command();
  program.name("mortarmq").description("MortarMQ Edge broker CLI").showHelpAfterError();
  addGlobalOptions(program);
  registerDev(program);
  registerBridge(program);
  registerTopics(program);
  registerGroups(program);
  registerPub(program);
  registerSub(program);
  registerMq9(program);
  registerAdmin(program);
  return program;
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
