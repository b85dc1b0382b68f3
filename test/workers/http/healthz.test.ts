import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";

describe("GET /healthz", () => {
  it("answers 200 with the version", async () => {
    const res = await SELF.fetch("http://broker/healthz");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; version: string };
    expect(body.status).toBe("ok");
    expect(body.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("reports the auth mode: open without AUTH_TOKENS, tokens with them", async () => {
    expect(((await (await SELF.fetch("http://broker/healthz")).json()) as { auth: string }).auth).toBe("open");
    const closed = { ...(env as unknown as Env), AUTH_TOKENS: "t:acme" };
    const res = await app.fetch(new Request("http://broker/healthz"), closed, createExecutionContext());
    expect(((await res.json()) as { auth: string }).auth).toBe("tokens");
  });
});

describe("GET /healthz storage probe", () => {
  it("probes the storage object at most once per HEALTH_CACHE_MS per isolate (no global object per request)", async () => {
    const { UsageAggregator } = await import("../../../objects/usage/UsageAggregator");
    const proto = UsageAggregator.prototype;
    const original = proto.probe;
    let probes = 0;
    proto.probe = function (this: InstanceType<typeof UsageAggregator>) {
      probes++;
      return original.call(this);
    };
    try {
      await SELF.fetch("http://broker/healthz"); // probes unless a probe within the bound already succeeded
      const before = probes;
      for (let i = 0; i < 10; i++) expect((await SELF.fetch("http://broker/healthz")).status).toBe(200);
      expect(probes).toBe(before);
    } finally {
      proto.probe = original;
    }
  });
});
