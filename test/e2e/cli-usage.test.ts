/**
 * What a new user sees before any broker is involved: `--version` / `-V`,
 * usage errors as one line plus one hint pointing to the command's own
 * `--help` (never the whole help text), and `--help` marking the required
 * options (docs/cli.md "Output, errors and exit status"). Runs the real
 * binary; no broker is started (nothing here may reach one).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../../client/local/broker";
import { runCli } from "../fixtures/cli-run";

/** Nothing listens on port 9: a command that tried to reach a broker would fail differently. */
const env = { MORTARMQ_URL: "http://127.0.0.1:9" };
const PACKAGE_VERSION = (JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }).version;

describe("mortarmq --version", () => {
  it("--version and -V print the package version and exit 0", async () => {
    expect(PACKAGE_VERSION).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ["--version", "-V"]) {
      expect(await runCli([flag], env)).toEqual({ code: 0, stdout: `${PACKAGE_VERSION}\n`, stderr: "" });
    }
  });
});

describe("usage errors: the error and one hint line", () => {
  const cases: [args: string[], message: string, command: string][] = [
    [["pub"], "missing required argument 'topic'", "pub"],
    [["sub", "orders"], "required option '-g, --group <name>' not specified", "sub"],
    [["topics", "create", "orders", "--bogus"], "unknown option '--bogus'", "topics create"],
    [["topics", "delete"], "missing required argument 'name'", "topics delete"],
    [["mq9", "send"], "missing required argument 'address'", "mq9 send"],
    [["nosuch"], "unknown command 'nosuch'", ""],
    [["topics", "create", "orders", "--partitions", "0"], "--partitions must be between 1 and 65535, not 0", "topics create"],
    [["pub", "orders", "v", "--in-flight", "x"], '--in-flight must be a whole number, not "x"', "pub"],
  ];

  for (const [args, message, command] of cases) {
    it(`mortarmq ${args.join(" ")}`, async () => {
      const help = `see \`mortarmq ${command ? command + " " : ""}--help\``;
      expect(await runCli(args, env)).toEqual({ code: 1, stdout: "", stderr: `mortarmq: USAGE: ${message}\n  what to do: ${help}\n` });
    });
  }

  it("with --json the usage error is one JSON document on stderr", async () => {
    const r = await runCli(["pub", "--json"], env);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(JSON.parse(r.stderr)).toEqual({
      error: { name: "USAGE", code: null, status: null, message: "missing required argument 'topic'", action: null, hint: "see `mortarmq pub --help`" },
    });
  });
});

describe("--help", () => {
  it("sub --help marks --group as required, and only it", async () => {
    const r = await runCli(["sub", "--help"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}-g, --group <name> +consumer group \(required\)$/m);
    expect(r.stdout.match(/\(required\)/g)).toHaveLength(1);
  });

  it("the program's help lists -V, --version", async () => {
    const r = await runCli(["--help"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}-V, --version +print the version of mortarmq$/m);
  });
});
