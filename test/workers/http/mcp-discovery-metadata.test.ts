/** `MCP_AUTHORIZATION_SERVERS` parsing and the metadata document (worker/mcp/discovery.ts). */
import { describe, expect, it } from "vitest";
import { authorizationServers, mcpChallenge, resourceMetadata } from "../../../worker/mcp/discovery";
import type { Env } from "../../../objects/env";

describe("authorizationServers", () => {
  it.each([
    [undefined, []],
    ["", []],
    ["https://auth.example.com", ["https://auth.example.com"]],
    [" https://a.example/ , https://b.example/realms/x ", ["https://a.example/", "https://b.example/realms/x"]],
    ["http://auth.example.com", []], // plain http only on loopback
    ["http://127.0.0.1:9000,http://localhost:9000", ["http://127.0.0.1:9000", "http://localhost:9000"]],
    ["not a url,ftp://x.example", []],
  ])("%j → %j", (value, expected) => {
    expect(authorizationServers(value)).toEqual(expected);
  });
});

describe("resourceMetadata", () => {
  it("names the /mcp resource of the origin, and the authorization servers only when set", () => {
    expect(resourceMetadata("https://mq.example.com", {} as Env)).toEqual({ resource: "https://mq.example.com/mcp", bearer_methods_supported: ["header"], resource_name: "MortarMQ Edge mq9 (MCP)" });
    expect(resourceMetadata("https://mq.example.com", { MCP_AUTHORIZATION_SERVERS: "https://auth.example.com" } as Env).authorization_servers).toEqual(["https://auth.example.com"]);
  });

  it("the 401 challenge points at the path-inserted metadata", () => {
    expect(mcpChallenge("https://mq.example.com")).toBe('Bearer realm="mortarmq", resource_metadata="https://mq.example.com/.well-known/oauth-protected-resource/mcp"');
  });
});
