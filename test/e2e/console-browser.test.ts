/**
 * The web console (docs/console.md) in a real browser — Debian Chromium
 * driven by playwright-core — against the real local broker with tokens:
 * sign in with a tenant token; create a topic and see it listed; publish
 * with the CLI and see the record count and a consumer group's lag change;
 * reset the group and see the lag return; open a mailbox and see a message
 * sent over HTTP (node fetch, as curl would); DISCOVER ranks the expected
 * agent first; a push subscription to a node:http receiver shows on the
 * mailbox page with its delivered count; another tenant's token does not see the topic. No page
 * breaks the Content-Security-Policy or asks for anything that is not there (a favicon: 404);
 * the layout reflows at 200 % zoom. Long payloads and many rows (issue 28): a 2 KB binary message
 * is shortened with "show all" and leaves the other columns readable, table headers break only
 * between words, chart axis labels are not clipped (no ink at the canvas's left edge), a push
 * subscription that failed and then delivered shows "active", counts read "1 message".
 * Screenshots of every page go to test-artifacts/console/ (gitignored).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT, freePort, startLocalBroker, type LocalBroker } from "../../client/local/broker";
import { runCli } from "../fixtures/cli-run";
import { until } from "../fixtures/until";

const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const ACME = "console-token-acme";
const BETA = "console-token-beta";
const SHOTS = resolve(PACKAGE_ROOT, "test-artifacts/console");

let broker: LocalBroker;
let stateDir: string;
let browser: Browser;
/** Every CSP violation and page error seen by any page. */
const problems: string[] = [];
/** Every answer 404 any page got, and every favicon request (none: the page declares an empty icon). */
const missing: string[] = [];

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "mortarmq-e2e-console-"));
  broker = await startLocalBroker({ stateDir, port: 0, vars: {
    AUTH_TOKENS: `${ACME}:acme,${BETA}:beta`, TELEMETRY_FLUSH_MS: "1000", PUSH_ALLOW_LOOPBACK: "1", PUSH_BACKOFF_BASE_MS: "200", PUSH_BACKOFF_MAX_MS: "1000",
  } });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await broker?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

/** A new tab whose CSP violations, page errors, 404 answers and favicon requests are recorded. */
async function newPage(viewport = { width: 1280, height: 900 }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => { if (/Content.Security.Policy|Refused to/i.test(m.text())) problems.push(m.text()); });
  page.on("request", (r) => { if (/favicon/i.test(r.url())) missing.push(`requested ${r.url()}`); });
  page.on("response", (r) => { if (r.status() === 404) missing.push(`404 ${r.request().method()} ${r.url()}`); });
  return page;
}

/** A new tab signed in with `token` (the login form), on the overview. */
async function signedIn(token: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const page = await newPage(viewport);
  await page.goto(`${broker.url}/console`);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: /^Overview of tenant / }).waitFor();
  return page;
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Lines the text of `el` takes (distinct line boxes of its text). */
async function linesOf(el: Locator): Promise<number> {
  return el.evaluate((node) => {
    const r = document.createRange();
    r.selectNodeContents(node);
    return new Set(Array.from(r.getClientRects()).filter((b) => b.width > 0).map((b) => Math.round(b.top))).size;
  });
}

/** Table headers with a word broken across lines ("Gro up"): each word of a header (a break after a hyphen is fine) must take one line box. */
async function splitWords(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const bad: string[] = [];
    for (const th of Array.from(document.querySelectorAll("th"))) {
      const walk = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) {
        for (const m of (t.textContent ?? "").matchAll(/[^\s-]+/g)) {
          const r = document.createRange();
          r.setStart(t, m.index);
          r.setEnd(t, m.index + m[0].length);
          if (new Set(Array.from(r.getClientRects()).map((b) => Math.round(b.top))).size > 1) bad.push(`${m[0]} in "${th.textContent}"`);
        }
      }
    }
    return bad;
  });
}

/** The lines each column header (thead) of `table` takes, by its text. */
async function headerLines(table: Locator): Promise<Record<string, number>> {
  return table.evaluate((t) => Object.fromEntries(Array.from(t.querySelectorAll("thead th")).map((th) => {
    const r = document.createRange();
    r.selectNodeContents(th);
    return [th.textContent ?? "", new Set(Array.from(r.getClientRects()).filter((b) => b.width > 0).map((b) => Math.round(b.top))).size];
  })));
}

/**
 * Charts whose y-axis labels are clipped: uPlot draws them right-aligned
 * in the axis on the canvas, so a label wider than the axis leaves ink in
 * the canvas's leftmost pixel columns, where nothing else is drawn.
 */
async function clippedCharts(page: Page): Promise<string[]> {
  return page.evaluate(() => Array.from(document.querySelectorAll("figure.chart")).flatMap((fig) => {
    const canvas = fig.querySelector("canvas");
    if (!canvas) return [`${fig.querySelector("figcaption")?.textContent}: no canvas`];
    const px = canvas.getContext("2d")!.getImageData(0, 0, 3, canvas.height).data;
    for (let i = 3; i < px.length; i += 4) if (px[i]! > 0) return [fig.querySelector("figcaption")?.textContent ?? "?"];
    return [];
  }));
}

const cliEnv = () => ({ MORTARMQ_URL: broker.url, MORTARMQ_TOKEN: ACME });

async function mq9(token: string, subject: string, body: string | object, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${broker.url}/mq9/${subject}`, { method: "POST", headers: { authorization: `Bearer ${token}`, ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return (await res.json()) as Record<string, unknown>;
}

describe("the web console in Chromium", () => {
  it("asks for a token, and refuses a wrong one", async () => {
    const page = await newPage();
    await page.goto(`${broker.url}/console`);
    await page.getByLabel("Token").fill("not-a-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(/refused the token/);
    expect(await page.evaluate(() => location.href)).not.toContain("not-a-token");
    await shot(page, "login");
    await page.close();
  });

  it("topics: create, publish with the CLI, a group's lag, reset — then overview and a foreign tenant", async () => {
    const page = await signedIn(ACME);
    expect(await page.evaluate(() => sessionStorage.getItem("mortarmq.token"))).toBe(ACME);
    await page.getByRole("link", { name: "Topics", exact: true }).click();
    await page.getByLabel("New topic").fill("orders");
    await page.getByLabel("Partitions").fill("2");
    await page.getByRole("button", { name: "Create topic" }).click();
    await page.getByText("created topic orders (2 partitions) and orders.dlq").waitFor();
    const row = page.locator("tr", { has: page.getByRole("link", { name: "orders", exact: true }) });
    await row.waitFor();
    // the count says what the rows are: one topic listed with its twin
    await page.getByText("1 topic in tenant acme, and its dead-letter (.dlq) twin: 2 listed in all").waitFor();
    expect(await page.getByRole("table", { name: "Topics, by name" }).locator("tbody tr").count()).toBe(2);
    expect(await row.locator("td").allTextContents()).toEqual(["orders", "2", "0", "0 B", "0", "0", "7 d, 8.0 GiB"]);

    const file = join(stateDir, "orders.txt");
    writeFileSync(file, Array.from({ length: 10 }, (_, i) => `order ${i + 1}`).join("\n") + "\n");
    const pub = await runCli(["pub", "orders", "--file", file], cliEnv());
    expect(pub.code, pub.stderr).toBe(0);
    const sub = await runCli(["sub", "orders", "--group", "billing", "--count", "3"], cliEnv());
    expect(sub.code, sub.stderr).toBe(0);
    // The list refreshes every 5 s: 10 records ("order 1" … "order 10": 71 bytes), one group, lag 7.
    await page.waitForFunction(() => Array.from(document.querySelectorAll("tr")).some((tr) =>
      Array.from(tr.querySelectorAll("td")).map((td) => td.textContent).join("|") === "orders|2|10|71 B|1|7|7 d, 8.0 GiB"), null, { timeout: 20_000 });

    await row.getByRole("link", { name: "orders", exact: true }).click();
    await page.getByRole("heading", { name: "Topic orders" }).waitFor();
    await page.getByText(/^Lag 7 messages, 0 in flight, 0 dead-lettered, 0 members/).waitFor();
    await page.getByText("10 records (71 B) retained in all partitions.").waitFor(); // the topic's total of records
    expect(await page.getByRole("table", { name: "Partitions" }).locator("tfoot tr > *").allTextContents()).toEqual(["Total", "", "", "10", "71 B", ""]);
    const parts = page.getByRole("table", { name: "Partitions" });
    expect(await parts.locator("tbody tr").evaluateAll((rows) => rows.map((r) => Array.from(r.querySelectorAll("td")).slice(0, 4).map((td) => td.textContent)))).toEqual([
      ["0", "1", "5", "5"], ["1", "1", "5", "5"],
    ]);
    await page.waitForTimeout(3500); // a second lag sample for the chart
    await page.getByLabel("Reset to").selectOption("earliest");
    await page.getByRole("button", { name: "Reset group billing" }).click();
    await page.getByText(/^Lag 10 messages/).waitFor({ timeout: 10_000 });
    await page.waitForTimeout(3500);

    await page.getByLabel("Value").fill("from the console");
    await page.getByRole("button", { name: "Publish" }).click();
    await page.getByText(/^published to partition 0 at sequence 6$/).waitFor();
    await page.getByLabel("Last N").fill("2");
    await page.getByRole("button", { name: "Peek" }).click();
    const peek = page.getByRole("table", { name: "Newest records of partition 0" });
    await peek.waitFor();
    expect(await peek.locator("tbody tr td:nth-child(3)").allTextContents()).toEqual(["order 9", "from the console"]);
    await shot(page, "topic");
    await page.screenshot({ path: join(SHOTS, "topic-top.png") }); // the first screen (docs/console.md)

    await page.getByRole("link", { name: "Overview" }).click();
    await page.waitForFunction(() => /Messages in/.test(document.body.textContent ?? ""));
    await page.waitForTimeout(6000); // the counts of the CLI's connections arrive with their reports (1 s) and the next refresh (5 s)
    await expect(page.locator(".tiles").textContent()).resolves.toContain("Topics1");
    await shot(page, "overview");
    await page.close();

    // Another tenant's token sees none of it; asking for acme by name is refused.
    const other = await signedIn(BETA);
    await other.getByRole("link", { name: "Topics", exact: true }).click();
    await other.getByText("0 topics in tenant beta").waitFor();
    expect(await other.getByRole("link", { name: "orders", exact: true }).count()).toBe(0);
    const foreign = await other.evaluate(async (t) => (await fetch("/v0/topics?tenant=acme", { headers: { authorization: `Bearer ${t}` } })).status, BETA);
    expect(foreign).toBe(403);
    await other.close();
  });

  it("mailboxes: a message sent over HTTP shows in its lane; the CLI lists the mailbox; push subscriptions are listed", async () => {
    const received: string[] = [];
    const receiver: Server = createServer((req, res) => {
      req.on("data", () => {});
      req.on("end", () => {
        received.push(String(req.headers["mq9-msg-id"]));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((ok) => receiver.listen(0, "127.0.0.1", ok));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    expect((await mq9(ACME, "$mq9.AI.MAILBOX.CREATE", { name: "task.inbox", ttl: 3600 })).error).toBe("");
    const push = await mq9(ACME, "$mq9.AI.PUSH.CREATE.task.inbox", { group_name: "hook", url, deliver: "earliest" });
    expect(push.error).toBe("");
    expect((await mq9(ACME, "$mq9.AI.MSG.SEND.task.inbox", "hello from curl", { "mq9-priority": "urgent" })).msg_id).toBe(0);
    const list = await runCli(["mq9", "list", "task."], cliEnv());
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^MAIL_ADDRESS\s+CREATED\s+EXPIRES\ntask\.inbox\s+\d{4}-/);

    const page = await signedIn(ACME);
    await page.getByRole("link", { name: "Mailboxes" }).click();
    await page.getByLabel("Filter by prefix").fill("task");
    await page.getByRole("link", { name: "task.inbox", exact: true }).click(); // task.inbox.dlq is listed too: PUSH.CREATE made it
    await page.getByRole("heading", { name: "Mailbox task.inbox" }).waitFor();
    const urgent = page.getByRole("table", { name: /^urgent lane: 1 message, 15 B/ });
    await urgent.waitFor();
    expect(await urgent.locator("tbody tr td").nth(1).textContent()).toBe("hello from curl");
    await page.getByLabel("Payload").fill("sent from the console");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("sent msg_id 1").waitFor();
    await page.getByRole("table", { name: /^normal lane: 1 message,/ }).waitFor();
    const pushes = page.getByRole("table", { name: /^Push subscriptions \(1\)/ });
    await pushes.waitFor();
    const cells = await pushes.locator("tbody tr td").allTextContents();
    expect(cells.slice(0, 4)).toEqual([push.push_id, "hook", url, "1"]);
    expect(received[0]).toBe("0"); // the first SEND was pushed before the page loaded its list
    expect(cells[6]).toMatch(/^[1-9]\d* · 0 · 0$/); // delivered · failed · dead-lettered
    expect(cells[7]).toBe("active");
    expect(cells[9]).toBe("never"); // last failure
    receiver.close();
    await shot(page, "mailbox");
    await page.getByRole("button", { name: "Delete message 1" }).click();
    await page.getByText("deleted msg_id 1").waitFor();
    await page.getByRole("table", { name: /^normal lane: 0 messages/ }).waitFor();
    await page.getByRole("link", { name: "Mailboxes" }).click();
    await page.getByRole("link", { name: "task.inbox", exact: true }).waitFor();
    await shot(page, "mailboxes");
    await page.close();
  });

  it("agents: DISCOVER ranks the expected agent first", async () => {
    for (const card of [
      { name: "weather", description: "forecasts rain and temperature for a city", mailbox: "agent.weather.inbox" },
      { name: "translator", description: "translates documents between English and German", mailbox: "agent.translator.inbox" },
      { name: "summarizer", description: "summarizes long documents into short notes", mailbox: "agent.summarizer.inbox" },
    ]) expect((await mq9(ACME, "$mq9.AI.AGENT.REGISTER", card)).error).toBe("");
    expect((await mq9(ACME, "$mq9.AI.AGENT.REPORT", { name: "translator", status: "busy" })).error).toBe("");
    const page = await signedIn(ACME);
    await page.getByRole("link", { name: "Agents" }).click();
    const agents = page.getByRole("table", { name: "Registered agents, oldest first" });
    await agents.locator("tbody tr", { hasText: "translator" }).waitFor();
    expect(await agents.locator("tbody tr", { hasText: "translator" }).locator("td").nth(3).textContent()).toMatch(/^\{"name":"translator","status":"busy"\} at /);
    for (const [mode, query] of [["Text (keywords)", "translate German"], ["Semantic (description)", "convert a text into another language"]] as const) {
      await page.getByLabel(mode).check();
      await page.getByLabel("Query").fill(query);
      await page.getByRole("button", { name: "Discover" }).click();
      await page.getByRole("list", { name: "Ranked results" }).locator("li").first().waitFor();
      expect(await page.getByRole("list", { name: "Ranked results" }).locator("li strong").first().textContent(), mode).toBe("translator");
    }
    await shot(page, "agents");
    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByRole("table", { name: "Quotas" }).waitFor();
    await shot(page, "usage");
    await page.close();
  });

  it("long payloads and many rows: payloads shortened, columns and headers readable, axis labels whole, push status after recovery, counts", async () => {
    // Three topics (each with its twin); "wide" gets 12,000 records and a group that read one: axis labels like "12,000 msgs".
    for (const name of ["wide", "zeta"]) {
      const r = await fetch(`${broker.url}/v0/topics`, { method: "POST", headers: { authorization: `Bearer ${ACME}`, "content-type": "application/json" }, body: JSON.stringify({ name, partitions: 1 }) });
      expect(r.status).toBe(201);
    }
    const file = join(stateDir, "wide.txt");
    writeFileSync(file, Array.from({ length: 12_000 }, (_, i) => `w${i}`).join("\n") + "\n");
    const pub = await runCli(["pub", "wide", "--file", file], cliEnv());
    expect(pub.code, pub.stderr).toBe(0);
    const sub = await runCli(["sub", "wide", "--group", "slow", "--count", "1"], cliEnv());
    expect(sub.code, sub.stderr).toBe(0);

    // A mailbox with a 2 KB binary message (key, tags), a 5,000-character text one and 40 short ones.
    expect((await mq9(ACME, "$mq9.AI.MAILBOX.CREATE", { name: "wide.inbox", ttl: 3600 })).error).toBe("");
    const binary = Uint8Array.from({ length: 2048 }, (_, i) => (i * 151 + 7) % 256);
    const sent = await fetch(`${broker.url}/mq9/$mq9.AI.MSG.SEND.wide.inbox`, {
      method: "POST", headers: { authorization: `Bearer ${ACME}`, "mq9-priority": "critical", "mq9-key": "blob", "mq9-tags": "binary,large" }, body: binary,
    });
    expect(((await sent.json()) as { msg_id: number }).msg_id).toBe(0);
    expect((await mq9(ACME, "$mq9.AI.MSG.SEND.wide.inbox", "x".repeat(5000), { "mq9-priority": "urgent" })).msg_id).toBe(1);
    for (let i = 0; i < 40; i++) expect((await mq9(ACME, "$mq9.AI.MSG.SEND.wide.inbox", `note ${i}`)).error).toBe("");

    // A push subscription to a port nothing listens on yet: it fails ("connection failed"), then the receiver starts and it delivers.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/hook`;
    const push = await mq9(ACME, "$mq9.AI.PUSH.CREATE.wide.inbox", { group_name: "relay", url, deliver: "earliest", concurrency: 4, max_attempts: 100 });
    expect(push.error).toBe("");
    const listPush = async () => ((await mq9(ACME, "$mq9.AI.PUSH.LIST.wide.inbox", {})).pushes as Record<string, unknown>[])[0]!;
    await until(async () => ((await listPush()).failed as number) >= 1);

    const page = await signedIn(ACME);
    await page.evaluate(() => { location.hash = "#/mailboxes/wide.inbox"; });
    const critical = page.getByRole("table", { name: /^critical lane: 1 message, 2\.0 KiB/ });
    await critical.waitFor();
    const pushes = page.getByRole("table", { name: /^Push subscriptions \(1\)/ });
    await pushes.waitFor();
    expect(await pushes.locator("tbody tr td").nth(7).textContent()).toMatch(/^retrying: connection failed/);
    await shot(page, "mailbox-long-failing");

    const payload = critical.locator("tbody tr td").nth(1);
    const full = `base64:${Buffer.from(binary).toString("base64")}`;
    expect(await payload.textContent()).toBe(`${full.slice(0, 160)}… show all ${full.length.toLocaleString("en-US")}`);
    const widths = async () => critical.locator("tbody tr td").evaluateAll((tds) => tds.map((td) => Math.round(td.getBoundingClientRect().width)));
    const before = await widths();
    for (const i of [0, 2, 3, 4, 5]) expect(before[i], `column ${i} of ${JSON.stringify(before)}`).toBeGreaterThanOrEqual(48);
    expect(await critical.locator("tbody tr td").nth(3).textContent()).toBe("binary, large");
    expect(await linesOf(critical.locator("tbody tr td").nth(3))).toBe(1); // the tags on one line
    await critical.getByRole("button", { name: /^Show all of message 0/ }).click();
    expect(await payload.textContent()).toBe(`${full} show less`);
    const after = await widths();
    for (const i of [0, 2, 3, 4, 5]) expect(after[i], `column ${i} of ${JSON.stringify(after)}`).toBeGreaterThanOrEqual(48);
    await shot(page, "mailbox-long-expanded");
    await critical.getByRole("button", { name: /^Show less of message 0/ }).click();
    await page.getByRole("table", { name: /^urgent lane: 1 message, 4\.9 KiB/ }).waitFor();
    await page.getByRole("table", { name: /^normal lane: 40 messages, / }).waitFor();
    expect(await splitWords(page)).toEqual([]);
    for (const lane of ["critical", "urgent", "normal"]) {
      expect(await headerLines(page.getByRole("table", { name: new RegExp(`^${lane} lane`) }))).toEqual({ msg_id: 1, Payload: 1, Key: 1, Tags: 1, Created: 1, "": 0 });
    }
    const pushHeads = await headerLines(pushes);
    for (const h of ["push_id", "Group", "URL", "Concurrency", "Backlog", "Status"]) expect(pushHeads[h], h).toBe(1); // "Gro up", "Concurr ency" before
    for (const h of ["In flight", "Last success", "Last failure"]) expect(pushHeads[h], h).toBeLessThanOrEqual(2);

    // The receiver starts: the next attempts deliver; the status is the latest attempt's.
    const receiver: Server = createServer((req, res) => {
      req.on("data", () => {});
      req.on("end", () => res.writeHead(204).end());
    });
    await new Promise<void>((ok) => receiver.listen(port, "127.0.0.1", ok));
    try {
      await until(async () => (await listPush()).delivered === 42, 30_000);
      const info = await listPush();
      expect(info.last_error).toMatch(/^connection failed/); // still on record
      // the page refreshes every 5 s: it shows every message delivered and the status "active"
      const row = async () => (await pushes.locator("tbody tr td").allTextContents()).slice(4, 8).join(" | ");
      await expect.poll(row, { timeout: 15_000, interval: 500 }).toMatch(/^0 \| 0 \| 42 · [1-9]\d* · 0 \| active$/);
      const cells = await pushes.locator("tbody tr td").allTextContents();
      const [success, failure] = [cells[8]!, cells[9]!].map((t) => Date.parse(t.replace(/\s+UTC$/, "Z").replace(" ", "T")));
      expect(success).toBeGreaterThanOrEqual(failure!); // the last failure came before the last success
      await shot(page, "mailbox-long-recovered");
    } finally {
      receiver.close();
    }

    // Topics: three topics and their twins, six rows.
    await page.getByRole("link", { name: "Topics", exact: true }).click();
    await page.getByText("3 topics in tenant acme, and their 3 dead-letter (.dlq) twins: 6 listed in all").waitFor();
    expect(await page.getByRole("table", { name: "Topics, by name" }).locator("tbody tr").count()).toBe(6);

    // Charts: the topic's lag, the overview, usage — no axis label runs off the canvas's left edge.
    await page.evaluate(() => { location.hash = "#/topics/wide"; });
    await page.getByText(/^Lag 11,999 messages, 0 in flight, 0 dead-lettered, 0 members/).waitFor();
    await page.getByText("12,000 records (", { exact: false }).waitFor();
    await page.locator("figure.chart canvas").first().waitFor();
    await page.waitForTimeout(3500); // a second sample
    expect(await clippedCharts(page)).toEqual([]);
    expect(await splitWords(page)).toEqual([]);
    await shot(page, "topic-wide");
    await page.getByRole("link", { name: "Overview" }).click();
    await page.waitForFunction(() => /Messages in/.test(document.body.textContent ?? ""));
    await page.locator("figure.chart canvas").first().waitFor();
    await page.waitForTimeout(6000); // the CLI's 12,000 messages arrive with the next report and refresh
    expect(await clippedCharts(page)).toEqual([]);
    await shot(page, "overview-wide");
    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByRole("table", { name: "Quotas" }).waitFor();
    await page.locator("figure.chart canvas").first().waitFor();
    expect(await clippedCharts(page)).toEqual([]);
    expect(await splitWords(page)).toEqual([]);
    await shot(page, "usage-wide");
    await page.close();
  });

  it("a page address that is not valid percent-encoding shows an error and the console keeps working", async () => {
    const page = await signedIn(ACME);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.evaluate(() => { location.hash = "#/topics/%E2%82"; });
    await expect(page.getByRole("alert").textContent()).resolves.toBe("This page address is not valid: #/topics/%E2%82");
    await page.getByRole("link", { name: "Topics" }).click();
    await page.getByRole("heading", { name: "Topics" }).waitFor();
    expect(errors).toEqual([]);
    await page.close();
  });

  it("keyboard and 200 % zoom: a skip link first, pages reachable by Tab and Enter, no horizontal scrolling", async () => {
    const page = await signedIn(ACME, { width: 640, height: 450 }); // 1280×900 at 200 %
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    let found = false;
    for (let i = 0; i < 10 && !found; i++) {
      await page.keyboard.press("Tab");
      found = (await page.evaluate(() => document.activeElement?.textContent)) === "Topics";
    }
    expect(found).toBe(true);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Topics" }).waitFor();
    for (const p of ["overview", "topics", "topics/orders", "mailboxes", "mailboxes/task.inbox", "agents", "usage"]) {
      await page.evaluate((h) => { location.hash = h; }, `#/${p}`);
      await page.waitForTimeout(800);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, p).toBeLessThanOrEqual(0);
    }
    expect(await splitWords(page)).toEqual([]); // at 200 %: headers still break only between words
    await shot(page, "zoom-200");
    await page.close();
    expect(problems).toEqual([]);
    expect(missing).toEqual([]);
  });
});
