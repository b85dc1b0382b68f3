/**
 * Consumer-group management over HTTP (DESIGN.md §8; docs/groups.md), per
 * tenant — a tenant's token manages its own groups; the operator token (or
 * anyone on an open broker) names the tenant with `?tenant=` (default
 * `default`), as `/stats` does (access.ts):
 *
 * | route | answer |
 * |---|---|
 * | `GET /v0/topics/:topic/groups` | 200 `{tenant, topic, topic_id, groups: [...], truncated}` (bounded: objects/group/listing.ts) |
 * | `GET /v0/topics/:topic/groups/:group` | 200 the group document; 404 |
 * | `DELETE /v0/topics/:topic/groups/:group[?force=1]` | 200 `{deleted: true, removed_members}`; 409 while it has members (without force); 404 |
 * | `POST /v0/topics/:topic/groups/:group/reset` `{to, partition?}` | 200 where each partition moves; 400; 404 |
 * | `POST /v0/topics/:topic/groups/:group/pause` `{until}` | 200 the group document; 400; 404 |
 * | `POST /v0/topics/:topic/groups/:group/resume` | 200 the group document; 404 |
 *
 * `:topic` and `:group` are URL-encoded names (UTF-8, 1–255 bytes). The
 * routes only resolve the topic and call the ConsumerGroup object
 * (objects/group/), which holds the logic — after checking the group exists
 * (groupKnown: the registry's index, or positions of a group from before
 * group registration), so a missing group is a 404 that creates no object.
 * A failing object call → 503.
 */
import type { Context, Hono } from "hono";
import type { Env } from "../../objects/env";
import { MAX_GROUP_LEN, MAX_TOPIC_LEN } from "../../wire/mortar/constants";
import {
  formatResetTarget, parseResetTarget, pauseBodySchema, resetBodySchema, type DeleteAnswer, type GroupDoc, type ResetAnswer,
} from "../../wire/admin/groups";
import { registryStub } from "../../objects/registry/stub";
import { groupStub } from "../../objects/group/stub";
import { groupKnown, listGroups } from "../../objects/group/listing";
import type { TopicInfo } from "../../objects/registry/rpc";
import type { AdminResult } from "../../objects/tenants/rpc";
import type { GroupDescription } from "../../objects/group/rpc";
import { operatorAccess, scopeRefusal, scopedTenant } from "./access";
import type { Operation } from "../../wire/admin/scopes";
import { bodyError, jsonBody } from "./json-body";
import { pathName } from "./path-name";
import { objectsUnavailable } from "./unavailable";

type Ctx = Context<{ Bindings: Env }>;

/** What every route resolved before its own work. */
interface Scope {
  tenant: string;
  topic: TopicInfo;
  /** The group name (routes under `/groups/:group`). */
  group: string;
}

/** Registers the routes on `app`. */
export function registerGroupAdmin(app: Hono<{ Bindings: Env }>): void {
  app.get("/v0/topics/:topic/groups", scoped(false, null, async (c, s) => {
    const l = await listGroups(c.env, s.tenant, s.topic);
    return c.json({ tenant: s.tenant, topic: s.topic.name, topic_id: s.topic.topicId, groups: l.groups, truncated: l.truncated });
  }));

  app.get("/v0/topics/:topic/groups/:group", scoped(true, null, async (c, s) => document(c, s, await stubOf(c, s).describe())));

  app.delete("/v0/topics/:topic/groups/:group", scoped(true, "mortar.admin", async (c, s) => {
    const force = /^(1|true|yes)$/i.test(c.req.query("force") ?? "");
    const r = await stubOf(c, s).deleteGroup(force);
    if (!r.ok) return c.json({ error: r.error }, r.status);
    const answer: DeleteAnswer = { tenant: s.tenant, topic: s.topic.name, group: s.group, deleted: true, removed_members: r.value.removedMembers };
    return c.json(answer);
  }));

  app.post("/v0/topics/:topic/groups/:group/reset", scoped(true, "mortar.admin", async (c, s) => {
    const body = await jsonBody(c, resetBodySchema, true);
    if ("error" in body) return bodyError(c, body);
    const target = parseResetTarget(body.value.to);
    if ("error" in target) return c.json({ error: `to: ${target.error}` }, 400);
    const r = await stubOf(c, s).reset(target, body.value.partition ?? null);
    if (!r.ok) return c.json({ error: r.error }, r.status);
    const answer: ResetAnswer = {
      tenant: s.tenant, topic: s.topic.name, group: s.group, to: formatResetTarget(target),
      partitions: r.value.map((p) => ({ partition: p.partition, next_sequence: p.nextSequence, committed_floor: Math.max(0, p.nextSequence - 1), pending: p.pending })),
    };
    return c.json(answer);
  }));

  app.post("/v0/topics/:topic/groups/:group/pause", scoped(true, "mortar.admin", async (c, s) => {
    const body = await jsonBody(c, pauseBodySchema, true);
    if ("error" in body) return bodyError(c, body);
    const r = await stubOf(c, s).pause(Date.parse(body.value.until));
    if (!r.ok) return c.json({ error: r.error }, r.status);
    return document(c, s, await stubOf(c, s).describe());
  }));

  app.post("/v0/topics/:topic/groups/:group/resume", scoped(true, "mortar.admin", async (c, s) => {
    const r = await stubOf(c, s).pause(null);
    if (!r.ok) return c.json({ error: r.error }, r.status);
    return document(c, s, await stubOf(c, s).describe());
  }));
}

function stubOf(c: Ctx, s: Scope) {
  return groupStub(c.env, s.tenant, s.topic.incarnation, s.topic.topicId, s.group);
}

/** A describe result as the group document (the topic's name added). */
function document(c: Ctx, s: Scope, r: AdminResult<GroupDescription>): Response {
  if (!r.ok) return c.json({ error: r.error }, r.status);
  const doc: GroupDoc = { ...r.value, topic: s.topic.name };
  return c.json(doc);
}

/**
 * Wraps a handler: access (401/403 like /stats), the tenant, valid names
 * (400), the token's scopes for `op` on topic/group (403 `permission
 * denied: …`; null: a read, no scope needed beyond the tenant), the topic (404 when it does not exist), and a failing object call
 * → 503 with the reason.
 */
function scoped(withGroup: boolean, op: Operation | null, fn: (c: Ctx, s: Scope) => Promise<Response>): (c: Ctx) => Promise<Response> {
  return async (c) => {
    const access = await operatorAccess(c.env, c.req.header("authorization"));
    if (access.kind === "denied") return c.json({ error: access.error }, access.status, access.headers);
    const t = await scopedTenant(c.env, access, c.req.query("tenant"));
    if ("error" in t) return c.json({ error: t.error }, t.status);
    const topicName = pathName(c, 3, "topic", MAX_TOPIC_LEN);
    if ("error" in topicName) return c.json({ error: topicName.error }, 400);
    const groupName = withGroup ? pathName(c, 5, "group", MAX_GROUP_LEN) : { name: "" };
    if ("error" in groupName) return c.json({ error: groupName.error }, 400);
    const group = groupName.name;
    const refused = op === null ? null : scopeRefusal(access, op, { name: topicName.name, group });
    if (refused !== null) return c.json({ error: refused }, 403);
    try {
      const topic = await registryStub(c.env, t.tenant).find(topicName.name);
      if (!topic) return c.json({ error: `topic "${topicName.name}" does not exist` }, 404);
      // A missing group answers 404 without its ConsumerGroup object being started (created empty).
      if (withGroup && !(await groupKnown(c.env, t.tenant, topic, group))) return c.json({ error: `consumer group "${group}" does not exist` }, 404);
      return await fn(c, { tenant: t.tenant, topic, group });
    } catch (e) {
      return objectsUnavailable(c, "groups API", e);
    }
  };
}
