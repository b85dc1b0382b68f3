/**
 * The harness's object-call budget (DESIGN.md §10; issue 27 item 1): no
 * request may call more than CALL_BUDGET Durable Objects. `countingEnv`
 * wraps every Durable Object namespace of an env so each method call made
 * through one of its stubs is counted (and the object's name recorded);
 * `budgetFetch` runs one request through the Worker (`app.fetch`) with such
 * an env and fails the test when the request exceeded the budget.
 */
import { createExecutionContext, env as testEnv, waitOnExecutionContext } from "cloudflare:test";
import { expect } from "vitest";
import { app } from "../../../worker/app";
import type { Env } from "../../../objects/env";

/** Object calls one request may make at most. */
export const CALL_BUDGET = 100;

/** What a counting env saw. */
export interface CallLog {
  /** Method calls on stubs, all namespaces. */
  total: number;
  /** Per binding (e.g. `PARTITION`): the object names (idFromName / getByName) called, one entry per call. */
  calls: Map<string, string[]>;
}

function isNamespace(v: unknown): v is DurableObjectNamespace {
  return typeof v === "object" && v !== null && typeof (v as DurableObjectNamespace).idFromName === "function"
    && typeof (v as DurableObjectNamespace).get === "function";
}

/** `base` with every Durable Object namespace counting its calls into the returned log. */
export function countingEnv(base: Env = testEnv as unknown as Env): { env: Env; log: CallLog } {
  const log: CallLog = { total: 0, calls: new Map() };
  const wrapped: Record<string, unknown> = { ...(base as unknown as Record<string, unknown>) };
  for (const [binding, v] of Object.entries(base as unknown as Record<string, unknown>)) {
    if (isNamespace(v)) wrapped[binding] = countingNamespace(binding, v, log);
  }
  return { env: wrapped as unknown as Env, log };
}

function countingNamespace(binding: string, ns: DurableObjectNamespace, log: CallLog): DurableObjectNamespace {
  const names = new Map<string, string>();
  const stubOf = (stub: DurableObjectStub, name: string) => new Proxy(stub, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof prop !== "string" || prop === "then" || typeof v !== "function") return v;
      return (...args: unknown[]) => {
        log.total++;
        const list = log.calls.get(binding) ?? [];
        list.push(name);
        log.calls.set(binding, list);
        // Called as a method (an RPC callable's own `.apply` would be an RPC property).
        return (target as unknown as Record<string, (...a: unknown[]) => unknown>)[prop]!(...args);
      };
    },
  });
  return new Proxy(ns, {
    get(target, prop) {
      if (prop === "idFromName") {
        return (name: string) => {
          const id = target.idFromName(name);
          names.set(id.toString(), name);
          return id;
        };
      }
      if (prop === "get") return (id: DurableObjectId, o?: DurableObjectNamespaceGetDurableObjectOptions) => stubOf(target.get(id, o), names.get(id.toString()) ?? id.toString());
      if (prop === "getByName") return (name: string, o?: DurableObjectNamespaceGetDurableObjectOptions) => stubOf(target.getByName(name, o), name);
      if (prop === "jurisdiction") return (j: DurableObjectJurisdiction) => countingNamespace(binding, target.jurisdiction(j), log);
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === "function" ? (...a: unknown[]) => (target as unknown as Record<string | symbol, (...x: unknown[]) => unknown>)[prop]!(...a) : v;
    },
  });
}

/**
 * Runs `request` (a path or URL on `http://broker`) through the Worker with a
 * counting env and asserts it stayed within CALL_BUDGET object calls.
 * Answers the response and the log.
 */
export async function budgetFetch(request: string | Request, base?: Env): Promise<{ res: Response; log: CallLog }> {
  const { env, log } = countingEnv(base);
  const req = typeof request === "string" ? new Request(new URL(request, "http://broker")) : request;
  const ctx = createExecutionContext();
  const res = await app.fetch(req, env, ctx);
  const body = await res.arrayBuffer();
  await waitOnExecutionContext(ctx);
  expect(log.total, `${req.method} ${new URL(req.url).pathname}${new URL(req.url).search}: object calls`).toBeLessThanOrEqual(CALL_BUDGET);
  return { res: new Response(body, res), log };
}
