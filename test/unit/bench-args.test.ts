/** bench/runner.ts: `npm run bench` arguments — suite names, `--baseline <rev>` with `--interleave N`, `--launcher wrangler|miniflare`, suite options. */
import { describe, expect, it } from "vitest";
import { parseBenchArgs } from "../../bench/runner";
import { medianRatios } from "../../bench/interleave";

describe("npm run bench arguments", () => {
  it("picks suite names, the baseline revision, the launcher and suite options in either form", () => {
    expect(parseBenchArgs([])).toEqual({ only: [], baseline: undefined, launcher: "miniflare", rounds: 1, options: {} });
    expect(parseBenchArgs(["noop-floor", "--launcher", "wrangler", "mq9-http"])).toEqual({ only: ["noop-floor", "mq9-http"], baseline: undefined, launcher: "wrangler", rounds: 1, options: {} });
    expect(parseBenchArgs(["--launcher=miniflare", "--baseline=main", "nats-mq9"])).toEqual({ only: ["nats-mq9"], baseline: "main", launcher: "miniflare", rounds: 1, options: {} });
    expect(parseBenchArgs(["--baseline", "HEAD~1", "launchers"])).toEqual({ only: ["launchers"], baseline: "HEAD~1", launcher: "miniflare", rounds: 1, options: {} });
    expect(parseBenchArgs(["mailbox-flood", "--count", "5000", "--rate=40"])).toEqual({ only: ["mailbox-flood"], baseline: undefined, launcher: "miniflare", rounds: 1, options: { count: "5000", rate: "40" } });
  });

  it("refuses an unknown launcher and a flag without a value", () => {
    expect(() => parseBenchArgs(["--launcher", "workerd"])).toThrow('--launcher expects miniflare or wrangler, got "workerd"');
    expect(() => parseBenchArgs(["--launcher"])).toThrow("--launcher needs a value");
    expect(() => parseBenchArgs(["--baseline="])).toThrow("--baseline needs a value");
    expect(() => parseBenchArgs(["--interleave", "3"])).toThrow("--interleave needs --baseline <rev>");
    expect(() => parseBenchArgs(["--baseline", "main", "--interleave", "two"])).toThrow('--interleave expects a whole number of rounds, got "two"');
  });

  it("takes --interleave rounds with a baseline", () => {
    expect(parseBenchArgs(["mortar-pub", "--baseline", "main", "--interleave=5"])).toEqual({ only: ["mortar-pub"], baseline: "main", launcher: "miniflare", rounds: 5, options: {} });
  });

  it("reports per-row medians of this checkout ÷ baseline over interleaved rounds", () => {
    const ratios = medianRatios([
      { base: [{ target: "ws", "msg/s": 100, p50_ms: 2 }], current: [{ target: "ws", "msg/s": 90, p50_ms: 2 }] },
      { base: [{ target: "ws", "msg/s": 50, p50_ms: 4 }], current: [{ target: "ws", "msg/s": 60, p50_ms: 2 }] },
      { base: [{ target: "ws", "msg/s": 80, p50_ms: 0 }], current: [{ target: "ws", "msg/s": 80, p50_ms: 1 }] },
    ]);
    // msg/s ratios 0.9, 1.2, 1.0 → median 1.0; p50 ratios 1, 0.5 (the zero baseline is skipped) → upper median 1
    expect(ratios).toEqual([{ target: "ws", "msg/s": 1, p50_ms: 1 }]);
  });
});
