/**
 * Mailbox routes (docs/console.md "APIs", docs/mq9.md "Mailbox index"), per
 * tenant (scope.ts); used by the console and `mortarmq mq9 list`.
 *
 * | route | answer |
 * |---|---|
 * | `GET /v0/mailboxes?prefix&after&limit` | 200 MailboxPage: the tenant's mailboxes by address from its MailboxIndex, expired ones left out; 400 |
 * | `GET /v0/mailboxes/:address` | 200 MailboxDetail (lanes, delayed, groups and their floors); 400; 404 |
 *
 * Messages themselves are read, sent and deleted with mq9 (`POST /mq9/…`,
 * or `POST /v0/mq9/…` for the operator naming a tenant: mq9-api.ts).
 */
import type { Hono } from "hono";
import type { Env } from "../../objects/env";
import { mailAddressProblem } from "../../wire/mq9/address";
import { DEFAULT_MAILBOX_PAGE, MAX_MAILBOX_PAGE, type MailboxDetail, type MailboxPage } from "../../wire/admin/console";
import { mailboxIndexStub } from "../../objects/mailbox-index/stub";
import { mailboxStub } from "../../objects/mailbox/stub";
import type { MailboxPage as IndexPage } from "../../objects/mailbox-index/store";
import { withDeadline } from "../../objects/session/faults";
import { intParam, tenantRoute } from "./scope";

/** Registers the routes on `app`. */
export function registerMailboxRoutes(app: Hono<{ Bindings: Env }>): void {
  app.get("/v0/mailboxes", tenantRoute(async (c, s) => {
    const limit = intParam(c.req.query("limit"), DEFAULT_MAILBOX_PAGE, 1, MAX_MAILBOX_PAGE);
    if (limit === null) return c.json({ error: `limit must be a whole number from 1 to ${MAX_MAILBOX_PAGE}` }, 400);
    const prefix = c.req.query("prefix") ?? "";
    if (!/^[a-z0-9.]{0,128}$/.test(prefix)) return c.json({ error: "prefix must be up to 128 chars of [a-z0-9.] (mail_address characters)" }, 400);
    const after = c.req.query("after") || null;
    const page = await withDeadline(mailboxIndexStub(c.env, s.tenant).page(after, limit, prefix) as Promise<IndexPage>);
    const now = Date.now();
    const answer: MailboxPage = {
      tenant: s.tenant,
      // The index may still list a mailbox whose TTL ended until its removal lands (docs/mq9.md).
      mailboxes: page.mailboxes.filter((m) => m.expires_ms === null || m.expires_ms > now).map((m) => ({
        mail_address: m.address,
        created_at: new Date(m.created_ms).toISOString(),
        expires_at: m.expires_ms === null ? null : new Date(m.expires_ms).toISOString(),
      })),
      next: page.next,
    };
    return c.json(answer);
  }));

  app.get("/v0/mailboxes/:address", tenantRoute(async (c, s) => {
    const address = c.req.param("address") ?? "";
    const bad = mailAddressProblem(address);
    if (bad) return c.json({ error: `invalid mail_address: ${bad}` }, 400);
    const r = await withDeadline(Promise.resolve(mailboxStub(c.env, s.tenant, address).describe(address)));
    if (!r.ok) return c.json({ error: r.error }, r.code === "mailbox_not_found" ? 404 : 400);
    const answer: MailboxDetail = { tenant: s.tenant, ...r.detail };
    return c.json(answer);
  }));
}
