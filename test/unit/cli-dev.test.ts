import { describe, expect, it } from "vitest";
import { authLine, devVars } from "../../client/cli/dev";
import { HealthWatch, isHealthProbeLog } from "../../client/local/health";

describe("mortarmq dev --var / --auth-tokens", () => {
  it("collects repeated --var NAME=value (values may contain = and :) and the --auth-tokens shortcut", () => {
    expect(devVars([])).toEqual({});
    expect(devVars(["CORS_ORIGINS=https://a.example,https://b.example", "X=a=b:c", "EMPTY="], "t1:acme,t2:beta")).toEqual({
      CORS_ORIGINS: "https://a.example,https://b.example",
      X: "a=b:c",
      EMPTY: "",
      AUTH_TOKENS: "t1:acme,t2:beta",
    });
    expect(devVars(["AUTH_TOKENS=tok:acme"])).toEqual({ AUTH_TOKENS: "tok:acme" });
  });

  it("rejects malformed or conflicting options with a message", () => {
    expect(() => devVars(["CORS_ORIGINS"])).toThrow('--var expects NAME=value (e.g. --var CORS_ORIGINS=https://app.example), got "CORS_ORIGINS"');
    expect(() => devVars(["1BAD=x"])).toThrow("--var expects NAME=value");
    expect(() => devVars(["A=1", "A=2"])).toThrow("--var A given more than once");
    expect(() => devVars(["AUTH_TOKENS=a:b"], "c:d")).toThrow("use either --auth-tokens or --var AUTH_TOKENS=…, not both");
  });

  it("says plainly when the broker runs open", () => {
    expect(authLine("open")).toContain('OPEN — no AUTH_TOKENS and no ADMIN_TOKEN configured: every client is tenant "default"');
    expect(authLine("tokens")).toContain("tokens required");
  });
});

describe("mortarmq dev health watch", () => {
  it("declares the broker dead only after no probe succeeded for the whole grace", () => {
    const w = new HealthWatch(1_000, 10_000);
    expect(w.observe(false, 4_000)).toBe(false);
    expect(w.observe(true, 7_000)).toBe(false); // answered again: the clock restarts
    expect(w.observe(false, 16_999)).toBe(false);
    expect(w.observe(false, 17_000)).toBe(true);
    expect(w.silentFor(17_000)).toBe(10_000);
  });
});

describe("mortarmq dev output", () => {
  it("leaves out only the request-log lines of successful /healthz probes", () => {
    expect(isHealthProbeLog("[wrangler:info] GET /healthz 200 OK (2ms)")).toBe(true);
    expect(isHealthProbeLog("\x1b[2m[wrangler:info]\x1b[22m GET /healthz \x1b[32m200\x1b[39m OK (12ms)")).toBe(true);
    expect(isHealthProbeLog("[wrangler:info] GET /healthz 503 Service Unavailable (3002ms)")).toBe(false);
    expect(isHealthProbeLog("[wrangler:info] GET /stats 200 OK (5ms)")).toBe(false);
    expect(isHealthProbeLog("[wrangler:info] Ready on http://127.0.0.1:8787")).toBe(false);
  });
});
