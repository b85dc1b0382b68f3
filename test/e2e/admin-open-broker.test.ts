/**
 * `mortarmq admin tenants create` / `admin tokens issue` against an open local
 * broker (no AUTH_TOKENS, no ADMIN_TOKEN — what `npm start` runs): there every
 * client is tenant `default` and no token is checked, so a tenant or token
 * made there would do nothing (a printed token that `/v0/whoami` answers as
 * `default`). The broker refuses both with 409 and says why; the CLI shows it
 * and exits 1.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../fixtures/cli-run";
import { useLocalBroker } from "../fixtures/e2e-broker";

const e2e = useLocalBroker("adminopen");
const REFUSAL = "the broker runs open (no AUTH_TOKENS and no ADMIN_TOKEN): every client is tenant default and no token is checked, "
  + "so a tenant or token made now would do nothing; start it with an operator token to use tenants (mortarmq dev --var ADMIN_TOKEN=…)";

const cli = (args: string[]) => runCli(args, { MORTARMQ_URL: e2e.broker.url, MORTARMQ_TOKEN: "", MORTARMQ_ADMIN_TOKEN: "" });

describe("admin on an open broker", () => {
  it("tenants create and tokens issue are refused with the reason; nothing is created", async () => {
    expect(await cli(["admin", "tenants", "create", "acme"])).toMatchObject({ code: 1, stdout: "", stderr: `mortarmq: CONFLICT (HTTP 409): ${REFUSAL}\n` });
    expect(await cli(["admin", "tokens", "issue", "default"])).toMatchObject({ code: 1, stdout: "", stderr: `mortarmq: CONFLICT (HTTP 409): ${REFUSAL}\n` });
    const json = await cli(["admin", "tokens", "issue", "default", "--json"]);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { name: "CONFLICT", message: REFUSAL } });
    const list = await cli(["admin", "tenants", "list", "--json"]);
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as { tenants: { id: string }[] }).tenants.map((t) => t.id)).toEqual(["default"]);
  });
});
