/**
 * A refused token reads the same on every HTTP route (docs/tenants.md
 * "Auth modes"): /mq9, /mcp, /stats, /metrics, /admin and the console's /v0
 * APIs answer 401 `unauthorized: invalid token` for a token that is not one
 * (garbage, or a well-formed issued token nobody issued), `unauthorized:
 * token revoked` for a revoked one, each with `WWW-Authenticate`.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admin, tenantWithToken } from "./helpers";

/** The 401's error text (the MCP route answers a JSON-RPC error object, /metrics plain text) and its WWW-Authenticate. */
async function refusal(method: string, path: string, token: string): Promise<[number, string, string | null]> {
  const body = method === "POST" ? (path === "/mcp" ? JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) : "{}") : undefined;
  const headers: Record<string, string> = { Authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
  const res = await SELF.fetch(`http://broker${path}`, { method, headers, body });
  const text = await res.text();
  if (path === "/metrics") return [res.status, text.trimEnd(), res.headers.get("www-authenticate")]; // Prometheus text, not JSON
  const json = JSON.parse(text) as { error: string | { message: string } };
  return [res.status, typeof json.error === "string" ? json.error : json.error.message, res.headers.get("www-authenticate")];
}

const ROUTES: [string, string][] = [
  ["POST", "/mq9/$mq9.AI.MAILBOX.CREATE"], ["POST", "/mcp"], ["GET", "/stats"], ["GET", "/metrics"],
  ["GET", "/admin/tenants"], ["GET", "/v0/overview"], ["GET", "/v0/topics"], ["GET", "/admin/tenants/x/usage"],
];
const CHALLENGE = 'Bearer realm="mortarmq"';
/** /mcp's challenge also names its RFC 9728 resource metadata (worker/mcp/discovery.ts). */
const challenge = (path: string) => (path === "/mcp" ? `${CHALLENGE}, resource_metadata="http://broker/.well-known/oauth-protected-resource/mcp"` : CHALLENGE);

describe("token refusals, one wording on every HTTP route", () => {
  it("a token that is not one: unauthorized: invalid token", async () => {
    const { tenant } = await tenantWithToken("wording");
    for (const token of ["garbage", `mmq.${tenant}.0123456789ab.${"A".repeat(43)}`]) {
      for (const [method, path] of ROUTES) {
        expect([method, path, ...(await refusal(method, path, token))]).toEqual([method, path, 401, "unauthorized: invalid token", challenge(path)]);
      }
    }
  });

  it("a revoked token: unauthorized: token revoked", async () => {
    const { tenant, token, tokenId } = await tenantWithToken("wording-rev");
    expect((await admin("DELETE", `/admin/tenants/${tenant}/tokens/${tokenId}`)).status).toBe(200);
    for (const [method, path] of ROUTES) {
      expect([method, path, ...(await refusal(method, path, token))]).toEqual([method, path, 401, "unauthorized: token revoked", challenge(path)]);
    }
  });
});
