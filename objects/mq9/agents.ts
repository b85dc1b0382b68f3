/**
 * mq9 `$mq9.AI.AGENT.*` handler (docs/agents.md): decodes and validates the
 * request body here, then calls the tenant's AgentRegistry Durable Object
 * (`objectName("agents", tenant)`). Replies are the spec's
 * `{"error": ""}` (REGISTER, REPORT; UNREGISTER adds `removed`) and
 * `{"error": "", "agents": [...]}` (DISCOVER; its reply text is built by
 * splicing the stored cards in verbatim, see {@link discoverReply}).
 */
import type { AgentResult, RegisterSpec } from "../agents/rpc";
import { agentRegistryStub } from "../agents/stub";
import {
  mailboxKey,
  parseDiscoverRequest,
  parseRegisterRequest,
  parseReportRequest,
  parseUnregisterRequest,
} from "../../wire/mq9/agent-requests";
import type { Env } from "../env";
import type { Mq9Reply } from "./reply";

/** Agent verbs of the mq9 spec. */
export type AgentVerb = "REGISTER" | "UNREGISTER" | "REPORT" | "DISCOVER";

/**
 * Handles one agent request for `tenant`; returns the HTTP status and the
 * JSON reply. Invalid bodies throw Mq9Error(bad_request) (dispatch turns it
 * into a 400 reply); registry failures come back as their status (404
 * unknown agent on REPORT, 409 mailbox owned by another agent, 429 registry
 * full, 503 semantic search unavailable, 403 a REGISTER replacing an agent
 * whose mailbox `mayRegister` refuses).
 */
export async function handleAgentRequest(
  env: Env,
  tenant: string,
  verb: AgentVerb,
  payload: Uint8Array,
  mayRegister?: MayRegister,
): Promise<Mq9Reply> {
  const stub = agentRegistryStub(env, tenant);
  switch (verb) {
    case "REGISTER":
      return reply<{ created: boolean }>(await register(stub, parseRegisterRequest(payload), mayRegister), () => ({}));
    case "UNREGISTER":
      return reply<{ removed: boolean }>(await stub.unregister(parseUnregisterRequest(payload)), (r) => ({ removed: r.removed }));
    case "REPORT":
      return reply<object>(await stub.report(parseReportRequest(payload)), () => ({}));
    case "DISCOVER": {
      const r = await stub.discover(parseDiscoverRequest(payload));
      return r.ok ? discoverReply(r.agents) : reply(r, () => ({}));
    }
  }
}

/**
 * Whether the caller's token scopes let it register an agent with mailbox
 * key `mailbox` (null: no mailbox): null = yes, else the refusal text
 * (objects/tenants/permissions.ts `permit` for `agents.register`).
 */
export type MayRegister = (mailbox: string | null) => string | null;

/**
 * REGISTER for a caller limited by `mayRegister` (absent: full access, one
 * call). Its scopes were checked on the card's own mailbox; re-registering
 * a name replaces that agent's card, so the agent's current mailbox must be
 * one the caller may register too — else a token scoped to its own mailbox
 * could take over any agent by name (docs/tenants.md "Permissions"). The
 * registry checks it in the same transaction (`replaceOnlyMailboxKey`);
 * when the agent is registered with another mailbox the caller may use, the
 * call is repeated expecting that one (a change in between is refused, not
 * overwritten).
 */
async function register(stub: ReturnType<typeof agentRegistryStub>, spec: RegisterSpec, mayRegister?: MayRegister): Promise<AgentResult<{ created: boolean }>> {
  if (!mayRegister) return stub.register(spec);
  const key = spec.fields.mailbox === null ? null : mailboxKey(spec.fields.mailbox);
  const first = await stub.register({ ...spec, replaceOnlyMailboxKey: key });
  if (first.ok || first.registeredMailbox === undefined) return first;
  const refused = mayRegister(first.registeredMailbox);
  if (refused !== null) return { ok: false, status: 403, error: refused };
  return stub.register({ ...spec, replaceOnlyMailboxKey: first.registeredMailbox });
}

/**
 * The DISCOVER success reply for cards given as JSON texts: `json` is
 * `{"error":"","agents":[<card>,…]}` with every card spliced in verbatim
 * (no parse + stringify, so no stored card can break the reply); `body.agents`
 * parses the cards lazily, on first access, for in-process callers.
 */
export function discoverReply(cards: string[]): Mq9Reply {
  let parsed: Record<string, unknown>[] | undefined;
  const body = { error: "" } as Mq9Reply["body"];
  Object.defineProperty(body, "agents", {
    enumerable: true,
    get: () => (parsed ??= cards.map((c) => JSON.parse(c) as Record<string, unknown>)),
  });
  return { status: 200, body, json: `{"error":"","agents":[${cards.join(",")}]}` };
}

function reply<T extends object>(r: AgentResult<T>, fields: (ok: T) => Record<string, unknown>): Mq9Reply {
  if (!r.ok) return { status: r.status, body: { error: r.error } };
  return { status: 200, body: { error: "", ...fields(r as T) } };
}
