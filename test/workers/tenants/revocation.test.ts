/**
 * Token revocation on all three transports (docs/tenants.md "Revocation"):
 * new connections and requests are refused at once; open connections close
 * at their next re-check (TENANT_REVALIDATE_MS, 300 ms in this project).
 */
import { describe, expect, it } from "vitest";
import { ErrorCode, Op } from "../../../wire/mortar";
import { WsConn, connectFrame, expectErr, expectOk } from "../helpers/mortar-ws";
import { admin, mortarSession, mq9As, natsCheckedOnce, natsSession, recheck, tenantWithToken } from "./helpers";

describe("revocation", () => {
  it("MortarMQ: an open connection survives re-checks, closes with AUTH_FAILED after revocation; new CONNECTs are refused at once", async () => {
    const { tenant, token, tokenId } = await tenantWithToken("rv-mortar");
    const { stub, conn } = await mortarSession();
    await conn.connect(token);
    await recheck(stub); // re-checked: still valid
    await recheck(stub);
    conn.send([{ op: Op.PING }]);
    expectOk((await conn.take(1))[0], Op.PING);

    expect((await admin("DELETE", `/admin/tenants/${tenant}/tokens/${tokenId}`)).status).toBe(200);
    const fresh = await WsConn.open();
    fresh.send([connectFrame(token)]);
    const refused = expectErr((await fresh.take(1))[0], ErrorCode.AUTH_FAILED, Op.CONNECT);
    expect(new TextDecoder().decode(refused.message)).toMatch(/revoked/);
    expect((await fresh.waitClosed()).code).toBe(1008);

    await recheck(stub);
    const closing = expectErr((await conn.take(1))[0], ErrorCode.AUTH_FAILED);
    expect(new TextDecoder().decode(closing.message)).toMatch(/revoked/);
    expect((await conn.waitClosed()).code).toBe(1008);
  });

  it("NATS: an open connection gets -ERR 'Authorization Violation' after revocation; new CONNECTs are refused at once", async () => {
    const { tenant, token, tokenId } = await tenantWithToken("rv-nats");
    const { stub, conn } = await natsCheckedOnce(token);

    await admin("DELETE", `/admin/tenants/${tenant}/tokens/${tokenId}`);
    const fresh = await natsSession();
    fresh.conn.send(`CONNECT {"verbose":false,"auth_token":"${token}"}\r\nPING\r\n`);
    await fresh.conn.waitFor(/-ERR 'Authorization Violation'\r\n$/);
    expect(await fresh.conn.closed).toBe(1008);

    await recheck(stub);
    await conn.waitFor(/-ERR 'Authorization Violation'\r\n$/);
    expect(await conn.closed).toBe(1008);
  });

  it("HTTP: the next request after revocation is 401; other tokens of the tenant keep working", async () => {
    const { tenant, token, tokenId } = await tenantWithToken("rv-http");
    const other = (await admin("POST", `/admin/tenants/${tenant}/tokens`, { label: "other" })).json.token as string;
    expect((await mq9As(token, "$mq9.AI.MAILBOX.CREATE", { name: "box.one" })).body.error).toBe("");
    await admin("DELETE", `/admin/tenants/${tenant}/tokens/${tokenId}`);
    const r = await mq9As(token, "$mq9.AI.MSG.SEND.box.one", "hello");
    expect(r.status).toBe(401);
    expect(r.body.error).toBe("unauthorized: token revoked");
    expect((await mq9As(other, "$mq9.AI.MSG.SEND.box.one", "hello")).body).toEqual({ error: "", msg_id: 0 });
  });

  it("deleting the tenant closes its open connections at the next re-check", async () => {
    const { tenant, token } = await tenantWithToken("rv-del");
    const { stub, conn } = await mortarSession();
    await conn.connect(token);
    await admin("DELETE", `/admin/tenants/${tenant}`);
    await recheck(stub);
    expectErr((await conn.take(1))[0], ErrorCode.AUTH_FAILED);
    expect((await conn.waitClosed()).code).toBe(1008);
  });
});
