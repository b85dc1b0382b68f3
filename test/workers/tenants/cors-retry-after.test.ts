/**
 * A browser agent refused by its publish rate must be able to back off as
 * documented: the 429 it gets cross-origin carries `Retry-After` and
 * exposes it to the page script (`Access-Control-Expose-Headers`); without
 * that, `response.headers.get("Retry-After")` is null in the page.
 */
import { createExecutionContext, env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";
import { mq9As, tenantWithToken } from "./helpers";

vi.setConfig({ testTimeout: 20_000 });

const ORIGIN = "https://agent.example";
const testEnv = { ...(env as unknown as Env), CORS_ORIGINS: ORIGIN };

describe("429 to a page", () => {
  it("carries Retry-After, the allowed origin, and exposes Retry-After", async () => {
    const { token } = await tenantWithToken("cors-rate", { publish_msgs_per_s: 2 });
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "cors.box" })).body.error).toBe("");
    let refused: Response | null = null;
    for (let i = 0; i < 60 && refused === null; i++) {
      const req = new Request("http://broker/mq9/$mq9.AI.MSG.SEND.cors.box", { method: "POST", body: `p${i}`, headers: { Authorization: `Bearer ${token}`, Origin: ORIGIN } });
      const res = await app.fetch(req, testEnv, createExecutionContext());
      if (res.status === 429) refused = res;
      else await res.arrayBuffer();
    }
    expect(refused).not.toBeNull();
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused!.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    const exposed = (refused!.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(",").map((s) => s.trim());
    expect(exposed).toContain("retry-after");
    expect(((await refused!.json()) as { error: string }).error).toMatch(/^publish rate limit exceeded/);
  });
});
