/**
 * `mortarmq` command line (commander). Each command group lives in its own
 * module and registers itself on the program.
 */
import { Command } from "commander";
import { registerBridge } from "../bridge/command";
import { registerDev } from "./dev";

/** Builds the CLI program; exported for tests. */
export function buildProgram(): Command {
  const program = new Command();
  program.name("mortarmq").description("MortarMQ Edge broker CLI").showHelpAfterError();
  registerDev(program);
  registerBridge(program);
  return program;
}

/** Runs the CLI with `argv` (as in process.argv); sets the exit code on failure. */
export async function main(argv: string[]): Promise<void> {
  await buildProgram().parseAsync(argv);
}
