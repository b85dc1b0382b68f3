/** bench/runner.ts: `npm run bench` arguments — suite names, `--baseline <rev>`, `--launcher wrangler|miniflare`, suite options. */
import { describe, expect, it } from "vitest";
import { parseBenchArgs } from "../../bench/runner";

describe("npm run bench arguments", () => {
  it("picks suite names, the baseline revision, the launcher and suite options in either form", () => {
    expect(parseBenchArgs([])).toEqual({ only: [], baseline: undefined, launcher: "miniflare", options: {} });
    expect(parseBenchArgs(["noop-floor", "--launcher", "wrangler", "mq9-http"])).toEqual({ only: ["noop-floor", "mq9-http"], baseline: undefined, launcher: "wrangler", options: {} });
    expect(parseBenchArgs(["--launcher=miniflare", "--baseline=main", "nats-mq9"])).toEqual({ only: ["nats-mq9"], baseline: "main", launcher: "miniflare", options: {} });
    expect(parseBenchArgs(["--baseline", "HEAD~1", "launchers"])).toEqual({ only: ["launchers"], baseline: "HEAD~1", launcher: "miniflare", options: {} });
    expect(parseBenchArgs(["mailbox-flood", "--count", "5000", "--rate=40"])).toEqual({ only: ["mailbox-flood"], baseline: undefined, launcher: "miniflare", options: { count: "5000", rate: "40" } });
  });

  it("refuses an unknown launcher and a flag without a value", () => {
    expect(() => parseBenchArgs(["--launcher", "workerd"])).toThrow('--launcher expects miniflare or wrangler, got "workerd"');
    expect(() => parseBenchArgs(["--launcher"])).toThrow("--launcher needs a value");
    expect(() => parseBenchArgs(["--baseline="])).toThrow("--baseline needs a value");
  });
});
