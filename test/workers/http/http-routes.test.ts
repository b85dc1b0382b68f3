/**
 * The HTTP surface's answers for what is not a route (worker/app.ts,
 * README.md "HTTP routes"): an unknown path is a JSON 404, a known path
 * with a method it does not serve a JSON 405 with `Allow`, like the other
 * JSON routes.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

async function call(method: string, path: string): Promise<{ status: number; type: string | null; allow: string | null; body: unknown }> {
  const res = await SELF.fetch(`http://broker${path}`, { method, body: method === "GET" || method === "HEAD" ? undefined : "{}" });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON: compared as text */ }
  return { status: res.status, type: res.headers.get("content-type"), allow: res.headers.get("allow"), body };
}

describe("routes that do not exist, methods a route does not serve", () => {
  it("an unknown path is a JSON 404 naming it, under /v0/ and elsewhere", async () => {
    for (const path of ["/v0/nope", "/v0/topics/t/nope", "/nope", "/admin/nope", "/v0"]) {
      for (const method of ["GET", "POST"]) {
        const r = await call(method, path);
        expect(r, `${method} ${path}`).toEqual({ status: 404, type: expect.stringMatching(/^application\/json/), allow: null, body: { error: `no route ${path}` } });
      }
    }
  });

  it("a known path with another method is a JSON 405 with Allow", async () => {
    for (const [method, path, allow] of [
      ["DELETE", "/v0/overview", "GET, HEAD"],
      ["PUT", "/v0/topics", "GET, HEAD, POST"],
      ["PATCH", "/v0/topics/orders", "GET, HEAD, DELETE"],
      ["GET", "/v0/mq9/$mq9.AI.MAILBOX.CREATE", "POST"],
      ["POST", "/healthz", "GET, HEAD"],
      ["DELETE", "/stats", "GET, HEAD"],
      ["PATCH", "/admin/tenants/acme", "GET, HEAD, DELETE"],
      ["POST", "/v0/topics/orders/groups/g", "GET, HEAD, DELETE"],
    ] as const) {
      const r = await call(method, path);
      expect(r, `${method} ${path}`).toEqual({
        status: 405, type: expect.stringMatching(/^application\/json/), allow,
        body: { error: `method ${method} is not allowed on ${path} (allowed: ${allow})` },
      });
    }
  });

  it("HEAD is served wherever GET is (so Allow lists it)", async () => {
    expect((await call("HEAD", "/healthz")).status).toBe(200);
    expect((await call("HEAD", "/v0/overview")).status).toBe(200);
  });

  it("routes that answered 405 before keep their own answer", async () => {
    expect(await call("GET", "/mq9/$mq9.AI.MAILBOX.CREATE")).toMatchObject({ status: 405, allow: "POST, OPTIONS" });
    expect((await call("GET", "/mcp")).status).toBe(405);
  });
});
