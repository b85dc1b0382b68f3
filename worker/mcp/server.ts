/**
 * The MCP server of `POST /mcp`: the MCP SDK's McpServer with the mq9
 * tools of wire/mcp/tools.ts registered (docs/mcp.md). Each tool call is
 * one mq9 request, run by `run` (the route passes the mq9 service for the
 * caller's tenant); an mq9 error — or arguments that cannot be sent — is a
 * tool error result carrying the mq9 `error` text, never a protocol error.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { MQ9_INSTRUCTIONS, MQ9_TOOLS, ToolInputError, type Mq9ToolRequest, type ToolContext } from "../../wire/mcp/tools";
import { A2A_TOOLS } from "../../wire/mcp/a2a-tools";
import { VERSION } from "../../wire/version";

/** Runs one mq9 request and returns the reply's JSON text (`{"error": …, …}`). */
export type RunMq9 = (req: Mq9ToolRequest, signal: AbortSignal) => Promise<string>;

/** A tool error result: the model sees `text`. */
function toolError(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** Every tool tools/list gives: the 10 mq9 tools, then the 2 A2A inbox tools. */
export const MCP_TOOLS = [...MQ9_TOOLS, ...A2A_TOOLS];

/** A new server (one per HTTP request: the transport is stateless) whose tools run through `run`; `ctx` is the request's (its origin). */
export function buildMcpServer(run: RunMq9, ctx: ToolContext): McpServer {
  const server = new McpServer({ name: "mortarmq-edge", title: "MortarMQ Edge mq9", version: VERSION }, { instructions: MQ9_INSTRUCTIONS });
  for (const tool of MCP_TOOLS) {
    const config = { title: tool.title, description: tool.description, inputSchema: tool.inputSchema, annotations: tool.annotations };
    server.registerTool(tool.name, config, async (args: Record<string, unknown>, extra: { signal: AbortSignal }): Promise<CallToolResult> => {
      let req: Mq9ToolRequest;
      try {
        req = tool.request(args);
      } catch (e) {
        if (e instanceof ToolInputError) return toolError(e.message);
        throw e;
      }
      const reply = JSON.parse(await run(req, extra.signal)) as { error: string } & Record<string, unknown>;
      if (reply.error !== "") return toolError(reply.error);
      const result = tool.result(reply, args, ctx);
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
    });
  }
  return server;
}
