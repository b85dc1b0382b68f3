/**
 * MCP authorization discovery (worker/mcp/discovery.ts; docs/mcp.md
 * "Discovery") inside workerd with tokens configured: a 401 from /mcp names
 * the RFC 9728 resource metadata, and the MCP SDK's own client discovery
 * finds and parses it, from the challenge and from the well-known paths.
 */
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const fetchFn = (u: string | URL, init?: RequestInit) => SELF.fetch(u, init);
const INIT = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };

describe("MCP discovery (RFC 9728)", () => {
  it("a 401 from POST /mcp names the resource metadata, which the SDK's discovery reads", async () => {
    const res = await SELF.fetch("http://broker/mcp", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify(INIT),
    });
    expect(res.status).toBe(401);
    await res.body?.cancel();
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(res);
    expect(resourceMetadataUrl?.href).toBe("http://broker/.well-known/oauth-protected-resource/mcp");
    expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer realm="mortarmq", resource_metadata="/);
    const meta = await discoverOAuthProtectedResourceMetadata(new URL("http://broker/mcp"), { resourceMetadataUrl }, fetchFn);
    expect(meta).toEqual({ resource: "http://broker/mcp", bearer_methods_supported: ["header"], resource_name: "MortarMQ Edge mq9 (MCP)" });
  });

  it("the SDK finds it from the server URL alone (path-inserted well-known first), and the root form answers the same", async () => {
    const meta = await discoverOAuthProtectedResourceMetadata(new URL("http://broker/mcp"), undefined, fetchFn);
    expect(meta.resource).toBe("http://broker/mcp");
    const root = await SELF.fetch("http://broker/.well-known/oauth-protected-resource");
    expect(root.status).toBe(200);
    expect(await root.json()).toEqual(meta);
  });

  it("is public: no token needed, readable from any web origin", async () => {
    const pre = await SELF.fetch("http://broker/.well-known/oauth-protected-resource/mcp", {
      method: "OPTIONS",
      headers: { Origin: "https://inspector.example", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "mcp-protocol-version" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(pre.headers.get("Access-Control-Allow-Headers")).toContain("mcp-protocol-version");
    const get = await SELF.fetch("http://broker/.well-known/oauth-protected-resource/mcp", { headers: { Origin: "https://inspector.example" } });
    expect(get.status).toBe(200);
    expect(get.headers.get("Access-Control-Allow-Origin")).toBe("*");
    await get.body?.cancel();
  });
});
