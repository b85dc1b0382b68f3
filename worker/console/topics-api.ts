/**
 * Topic routes of the console (docs/console.md "APIs"), per tenant
 * (scope.ts). Thin: validate, resolve the topic, call objects/.
 *
 * | route | answer |
 * |---|---|
 * | `GET /v0/topics?prefix&after&limit` | 200 TopicPage (by name; a page ≤ `limit` topics and ≤ 512 partitions) |
 * | `POST /v0/topics` `{name, partitions, location_hint?}` | 201 created / 200 it existed with that count (and hint); 400 (a bad hint names the allowed ones); 409 other count, other hint, or registry full |
 * | `GET /v0/topics/:topic` | 200 TopicDetail; 404 |
 * | `DELETE /v0/topics/:topic` | 200 `{deleted: true}`; 400 a `.dlq` twin; 404 |
 * | `POST /v0/topics/:topic/partitions/:p/records` `{key?, value}` | 201 `{sequence}`; 400; 404; 429 quota |
 * | `GET /v0/topics/:topic/partitions/:p/records?last=N` | 200 PeekAnswer (newest N ≤ 100, oldest first); 400; 404 |
 *
 * Token scopes (docs/tenants.md "Permissions"): creating and deleting a
 * topic need `mortar.admin`, a test publish `mortar.publish`, a peek
 * `mortar.consume` (any group) on the topic — else 403 `{error}`, decided
 * before the topic is looked up (a forbidden caller learns nothing of it).
 * Listings and details stay open to every token of the tenant.
 */
import type { Hono } from "hono";
import type { Env } from "../../objects/env";
import { DeclareCreated, MAX_TOPIC_LEN } from "../../wire/mortar/constants";
import { ErrorCode } from "../../wire/mortar/errors";
import { bytesToBase64 } from "../../wire/mq9";
import {
  DEFAULT_TOPIC_PAGE, MAX_PEEK, MAX_TOPIC_PAGE, createTopicSchema, publishSchema,
  type PeekAnswer, type PublishAnswer, type TopicRow,
} from "../../wire/admin/console";
import { registryStub } from "../../objects/registry/stub";
import type { DeclareResult, TopicInfo } from "../../objects/registry/rpc";
import { topicDetail, topicPage } from "../../objects/registry/listing";
import { peekLast, publishOne } from "../../objects/partition/single";
import { withDeadline } from "../../objects/session/faults";
import { httpQuota } from "../quota";
import { bodyError, jsonBody } from "../admin/json-body";
import { pathName } from "../admin/path-name";
import { scopeRefusal, scopeRefusalAnyGroup } from "../admin/access";
import { noteTopicHint } from "../../objects/shared/location-hint";
import type { Operation } from "../../wire/admin/scopes";
import { intParam, tenantRoute, type Ctx, type TenantScope } from "./scope";

const te = new TextEncoder();

/** Registers the routes on `app`. */
export function registerTopicRoutes(app: Hono<{ Bindings: Env }>): void {
  app.get("/v0/topics", tenantRoute(async (c, s) => {
    const limit = intParam(c.req.query("limit"), DEFAULT_TOPIC_PAGE, 1, MAX_TOPIC_PAGE);
    if (limit === null) return c.json({ error: `limit must be a whole number from 1 to ${MAX_TOPIC_PAGE}` }, 400);
    const after = c.req.query("after");
    return c.json(await topicPage(c.env, s.tenant, after === undefined || after === "" ? null : after, c.req.query("prefix") ?? "", limit));
  }));

  app.post("/v0/topics", tenantRoute(async (c, s) => {
    const body = await jsonBody(c, createTopicSchema);
    if ("error" in body) return bodyError(c, body);
    const refused = scopeRefusal(s.access, "mortar.admin", { name: body.value.name });
    if (refused !== null) return c.json({ error: refused }, 403);
    const hint = body.value.location_hint ?? null;
    const r = await withDeadline(registryStub(c.env, s.tenant).declare(body.value.name, body.value.partitions, 0, undefined, true, hint) as Promise<DeclareResult>);
    if (!r.ok) return c.json({ error: r.message, code: r.code }, declareStatus(r.code));
    const created = r.created === DeclareCreated.CREATED;
    if (!created && hint !== null && r.topic.locationHint !== hint) {
      return c.json({ error: `topic "${r.topic.name}" exists with location hint ${r.topic.locationHint ?? "none"}, not ${hint}: a hint applies only when a topic is created (delete and create it again to move it)` }, 409);
    }
    noteTopicHint(s.tenant, r.topic);
    const row: Pick<TopicRow, "name" | "topic_id" | "partition_count" | "created_at" | "location_hint"> & { created: boolean } = {
      name: r.topic.name, topic_id: r.topicId, partition_count: r.partitionCount, created_at: new Date(r.topic.createdAt).toISOString(), created,
      ...(r.topic.locationHint ? { location_hint: r.topic.locationHint } : {}),
    };
    return c.json(row, row.created ? 201 : 200);
  }));

  app.get("/v0/topics/:topic", topicRoute(null, async (c, s, topic) => c.json(await topicDetail(c.env, s.tenant, topic))));

  app.delete("/v0/topics/:topic", topicRoute("mortar.admin", async (c, s, topic) => {
    if (topic.dlq) return c.json({ error: `"${topic.name}" is a dead-letter twin: it is deleted with its source topic` }, 400);
    const r = await withDeadline(registryStub(c.env, s.tenant).deleteTopic(topic.name) as Promise<DeclareResult>);
    if (!r.ok) return c.json({ error: r.message, code: r.code }, declareStatus(r.code));
    return c.json({ tenant: s.tenant, topic: topic.name, deleted: true });
  }));

  app.post("/v0/topics/:topic/partitions/:p/records", topicRoute("mortar.publish", async (c, s, topic) => {
    const p = partitionParam(c, topic);
    if (typeof p === "string") return c.json({ error: p }, 400);
    const body = await jsonBody(c, publishSchema);
    if ("error" in body) return bodyError(c, body);
    const key = te.encode(body.value.key ?? "");
    const value = te.encode(body.value.value);
    if (key.length > 255) return c.json({ error: "key: must be at most 255 bytes of UTF-8" }, 400);
    const refused = await httpQuota(c.env, s.tenant, undefined).admitSend(key.length + value.length);
    if (refused) return c.json({ error: refused.message }, 429, { "Retry-After": String(Math.max(1, Math.ceil(refused.retryAfterMs / 1000))) });
    const r = await publishOne(c.env, s.tenant, topic, p, key, value);
    if (!r.ok) return c.json({ error: r.message, code: r.code }, publishStatus(r.code));
    const answer: PublishAnswer = { topic: topic.name, partition: p, sequence: r.sequence };
    return c.json(answer, 201);
  }));

  app.get("/v0/topics/:topic/partitions/:p/records", topicRoute("mortar.consume", async (c, s, topic) => {
    const p = partitionParam(c, topic);
    if (typeof p === "string") return c.json({ error: p }, 400);
    const last = intParam(c.req.query("last"), 10, 1, MAX_PEEK);
    if (last === null) return c.json({ error: `last must be a whole number from 1 to ${MAX_PEEK}` }, 400);
    const records = await peekLast(c.env, s.tenant, topic, p, last);
    const answer: PeekAnswer = {
      topic: topic.name, partition: p,
      records: records.map((r) => ({
        sequence: r.sequence, key: bytesToBase64(r.key), value: bytesToBase64(r.value),
        timestamp: new Date(r.timestamp).toISOString(), producer_id: r.producerId.toString(),
      })),
    };
    return c.json(answer);
  }));
}

/**
 * A route under `/v0/topics/:topic`: the name checked (400), the token's
 * scope for `op` on it (403; null = open; `mortar.consume` on any group),
 * then the topic resolved (404).
 */
function topicRoute(op: Operation | null, fn: (c: Ctx, s: TenantScope, topic: TopicInfo) => Promise<Response>): (c: Ctx) => Promise<Response> {
  return tenantRoute(async (c, s) => {
    const name = pathName(c, 3, "topic", MAX_TOPIC_LEN);
    if ("error" in name) return c.json({ error: name.error }, 400);
    const refused = op === null ? null : op === "mortar.consume" ? scopeRefusalAnyGroup(s.access, op, name.name) : scopeRefusal(s.access, op, { name: name.name });
    if (refused !== null) return c.json({ error: refused }, 403);
    const topic = await withDeadline(registryStub(c.env, s.tenant).find(name.name) as Promise<TopicInfo | null>);
    if (!topic) return c.json({ error: `topic "${name.name}" does not exist` }, 404);
    noteTopicHint(s.tenant, topic); // a test publish may start the partition: where the topic was hinted
    return fn(c, s, topic);
  });
}

/** The `:p` parameter as a partition of `topic`, or the error text. */
function partitionParam(c: Ctx, topic: TopicInfo): number | string {
  const v = c.req.param("p") ?? "";
  const p = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
  if (!(p >= 0 && p < topic.partitionCount)) return `partition must be 0-${topic.partitionCount - 1} (topic "${topic.name}" has ${topic.partitionCount})`;
  return p;
}

/** HTTP status of a DECLARE refusal. */
function declareStatus(code: number): 400 | 404 | 409 | 429 {
  if (code === ErrorCode.UNKNOWN_TOPIC) return 404;
  if (code === ErrorCode.QUOTA_EXCEEDED) return 429; // the partitions quota
  if (code === ErrorCode.PARTITION_COUNT_MISMATCH || code === ErrorCode.MUTATION_NOT_PACKABLE) return 409;
  return 400;
}

/**
 * The status of a refused test publish: 404 the topic was deleted, 409 the
 * partition is full (discard new: it stays so until the limits change), 503
 * anything else (transient: retry).
 */
function publishStatus(code: number): 404 | 409 | 503 {
  return code === ErrorCode.TOPIC_DELETED ? 404 : code === ErrorCode.PARTITION_FULL ? 409 : 503;
}
