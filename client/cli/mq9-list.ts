/**
 * `mortarmq mq9 list [prefix]`: the tenant's mailboxes from
 * `GET /v0/mailboxes` (docs/console.md "APIs", docs/cli.md "mq9"), by
 * address, a page at a time (`--limit`, `--after`) or every page (`--all`).
 * The token is the tenant's, or the operator's with `--tenant`.
 */
import type { Command } from "commander";
import { action, printJson, type GlobalOptions } from "./context";
import { parseIntOption } from "./parse";
import type { MailboxRow } from "../../wire/admin/console";

/** Registers `list` on the `mq9` command. */
export function registerMq9List(mq9: Command): void {
  mq9
    .command("list [prefix]")
    .description("list the tenant's mailboxes by address (GET /v0/mailboxes), optionally those starting with a prefix")
    .option("--limit <n>", "mailboxes per page (1-1000)", "100")
    .option("--after <address>", "start after this address (the `next` of a previous page)")
    .option("--all", "follow every page")
    .option("--tenant <id>", "the tenant (only with the operator token; a tenant's token is its own tenant)")
    .action(action(async (g, prefix: string | undefined, o: { limit: string; after?: string; all?: boolean; tenant?: string }) => {
      const limit = parseIntOption("--limit", o.limit, 1, 1000);
      const { z } = await import("zod");
      const schema = z.object({
        tenant: z.string(),
        mailboxes: z.array(z.object({ mail_address: z.string(), created_at: z.string(), expires_at: z.string().nullable() })),
        next: z.string().nullable(),
      });
      const rows: MailboxRow[] = [];
      let after = o.after ?? null;
      let next: string | null = null;
      let tenant = "";
      do {
        const page = await listPage(g, schema, { prefix, limit, after, tenant: o.tenant });
        rows.push(...page.mailboxes);
        tenant = page.tenant;
        next = page.next;
        after = next;
      } while (o.all && next !== null);
      if (g.json) return printJson({ tenant, mailboxes: rows, next });
      const { formatTable } = await import("./format");
      const day = (iso: string | null) => (iso === null ? "never" : iso.replace(/\.\d{3}Z$/, "Z"));
      process.stdout.write(rows.length === 0
        ? `no mailboxes${prefix ? ` starting with ${prefix}` : ""}\n`
        : formatTable(["mail_address", "created", "expires"], rows.map((m) => [m.mail_address, day(m.created_at), day(m.expires_at)])));
      if (next !== null) process.stdout.write(`more: --after ${next} (or --all)\n`);
    }));
}

async function listPage<S extends import("zod").ZodType>(g: GlobalOptions, schema: S, o: { prefix?: string; limit: number; after: string | null; tenant?: string }): Promise<import("zod").infer<S>> {
  const { apiRequest } = await import("./http");
  const q = new URLSearchParams({ limit: String(o.limit) });
  if (o.prefix) q.set("prefix", o.prefix);
  if (o.after !== null) q.set("after", o.after);
  if (o.tenant !== undefined) q.set("tenant", o.tenant);
  return apiRequest(g, `/v0/mailboxes?${q}`, { method: "GET" }, schema, {
    400: ["BAD_REQUEST", "a prefix is mail_address characters: a-z, 0-9 and ."],
    401: ["UNAUTHORIZED", "pass the tenant's token with --token or MORTARMQ_TOKEN"],
    403: ["FORBIDDEN", "a tenant's token lists its own tenant only (--tenant needs the operator token)"],
    503: ["UNAVAILABLE", "the broker's objects did not answer; retry"],
  }, "this broker build has no mailbox listing (GET /v0/mailboxes)");
}
