/**
 * Helpers for the hosted-broker tests (project workers-tenants: ADMIN_TOKEN
 * "test-admin-token", static tenant "static-tenant", token re-check every
 * 300 ms, telemetry flush 100 ms).
 */
import { SELF, env, runDurableObjectAlarm } from "cloudflare:test";
import type { IssuedToken, Quotas } from "../../../wire/admin/tenants";
import type { Env } from "../../../objects/env";
import type { MortarSession } from "../../../objects/session/MortarSession";
import type { NatsSession } from "../../../objects/nats/NatsSession";
import { WsConn } from "../helpers/mortar-ws";
import { wrap } from "../helpers/nats-ws";
import { IDLE_RECHECK_FACTOR } from "../../../objects/tenants/config";

export const ADMIN = "test-admin-token";
export const STATIC_TOKEN = "test-static-token";
/** TENANT_REVALIDATE_MS of the project. */
export const REVALIDATE_MS = 300;

/** One admin API call with the operator token (or `token`). */
export async function admin(method: string, path: string, body?: unknown, token: string | null = ADMIN): Promise<{ status: number; json: any; headers: Headers }> {
  const headers: Record<string, string> = token === null ? {} : { Authorization: `Bearer ${token}` };
  const res = await SELF.fetch(`http://broker${path}`, {
    method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json, headers: res.headers };
}

let n = 0;
/** A fresh tenant id. */
export function freshTenant(base = "t"): string {
  return `${base}-${Date.now().toString(36)}-${(n++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

/** Creates a tenant (optionally with quotas) and issues one token for it. */
export async function tenantWithToken(base = "t", quotas?: Partial<Quotas>): Promise<{ tenant: string; token: string; tokenId: string }> {
  const tenant = freshTenant(base);
  const c = await admin("POST", "/admin/tenants", { id: tenant, name: `test ${base}`, ...(quotas ? { quotas } : {}) });
  if (c.status !== 201) throw new Error(`create ${tenant}: ${c.status} ${JSON.stringify(c.json)}`);
  const t = await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "test" });
  if (t.status !== 201) throw new Error(`issue ${tenant}: ${t.status} ${JSON.stringify(t.json)}`);
  const issued = t.json as IssuedToken;
  return { tenant, token: issued.token, tokenId: issued.token_id };
}

/** Sets a tenant's quotas (the body replaces all). */
export async function setQuotas(tenant: string, quotas: Partial<Quotas>): Promise<void> {
  const r = await admin("PUT", `/admin/tenants/${tenant}/quotas`, quotas);
  if (r.status !== 200) throw new Error(`quotas ${tenant}: ${r.status} ${JSON.stringify(r.json)}`);
}

/** `POST /mq9/<subject>` with a bearer token. */
export async function mq9As(token: string | null, subject: string, payload: unknown = ""): Promise<{ status: number; body: { error: string; [k: string]: unknown }; headers: Headers }> {
  const body = typeof payload === "string" || payload instanceof Uint8Array ? payload : JSON.stringify(payload);
  const res = await SELF.fetch(`http://broker/mq9/${subject}`, { method: "POST", body, headers: token === null ? {} : { Authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as { error: string }, headers: res.headers };
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const testEnv = env as unknown as Env;

/** A MortarMQ connection whose session stub the test holds (to run its alarm). */
export async function mortarSession() {
  const ns = testEnv.SESSION;
  const stub = ns.get(ns.newUniqueId());
  return { stub, conn: await WsConn.open(stub) };
}

/** A NATS connection whose session stub the test holds. */
export async function natsSession() {
  const ns = testEnv.NATS_SESSION;
  const stub = ns.get(ns.newUniqueId());
  const res = await stub.fetch("http://broker/nats", { headers: { Upgrade: "websocket" } });
  const c = wrap(res.webSocket!);
  await c.waitFor(/^INFO /);
  return { stub, conn: c };
}

/**
 * Lets the token re-check come due, then runs the session's alarm (unless it already ran). An idle
 * connection's re-check comes every IDLE_RECHECK_FACTOR × REVALIDATE_MS (objects/tenants/config.ts),
 * so that long: a re-check has run after whatever the test changed before the call.
 */
export async function recheck(stub: DurableObjectStub): Promise<void> {
  await sleep(IDLE_RECHECK_FACTOR * REVALIDATE_MS + 50);
  await runDurableObjectAlarm(stub);
}

/** A NATS connection CONNECTed with `token` that passed one token re-check (PING answered before and after). */
export async function natsCheckedOnce(token: string) {
  const { stub, conn } = await natsSession();
  conn.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\nPING\r\n`);
  await conn.waitFor(/PONG\r\n$/);
  await recheck(stub);
  conn.send("PING\r\n");
  await conn.waitFor(/PONG\r\nPONG\r\n$/);
  return { stub, conn };
}
