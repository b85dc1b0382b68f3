/** bench/runner.ts: `npm run bench` arguments — suite names, `--baseline <rev>`, `--launcher wrangler|miniflare`. */
import { describe, expect, it } from "vitest";
import { parseBenchArgs } from "../../bench/runner";

describe("npm run bench arguments", () => {
  it("picks suite names, the baseline revision and the launcher in either form", () => {
    expect(parseBenchArgs([])).toEqual({ only: [], baseline: undefined, launcher: "miniflare" });
    expect(parseBenchArgs(["noop-floor", "--launcher", "wrangler", "mq9-http"])).toEqual({ only: ["noop-floor", "mq9-http"], baseline: undefined, launcher: "wrangler" });
    expect(parseBenchArgs(["--launcher=miniflare", "--baseline=main", "nats-mq9"])).toEqual({ only: ["nats-mq9"], baseline: "main", launcher: "miniflare" });
    expect(parseBenchArgs(["--baseline", "HEAD~1", "launchers"])).toEqual({ only: ["launchers"], baseline: "HEAD~1", launcher: "miniflare" });
  });

  it("refuses an unknown launcher and an empty baseline", () => {
    expect(() => parseBenchArgs(["--launcher", "workerd"])).toThrow('--launcher expects miniflare or wrangler, got "workerd"');
    expect(() => parseBenchArgs(["--launcher"])).toThrow('--launcher expects miniflare or wrangler, got ""');
    expect(() => parseBenchArgs(["--baseline="])).toThrow("--baseline needs a git revision");
  });
});
