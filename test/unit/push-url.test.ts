import { describe, expect, it } from "vitest";
import { checkPushUrl, classifyHost, hostMatches, parseIpv6, pushUrlPolicy, type PushUrlPolicy } from "../../wire/mq9";

const DEPLOYED: PushUrlPolicy = pushUrlPolicy(undefined, undefined);
const LOCAL: PushUrlPolicy = pushUrlPolicy("1", "");

function refusal(url: string, policy = DEPLOYED): string {
  try {
    checkPushUrl(url, policy);
  } catch (e) {
    expect((e as { code: string }).code).toBe("bad_request");
    return (e as Error).message;
  }
  throw new Error(`${url} was accepted`);
}

describe("push endpoint URL policy (SSRF)", () => {
  it("accepts https:// to public hosts and normalizes the URL (no fragment)", () => {
    expect(checkPushUrl("https://hooks.example.com/mq9?x=1#frag", DEPLOYED)).toBe("https://hooks.example.com/mq9?x=1");
    expect(checkPushUrl("https://HOOKS.Example.com:8443/a", DEPLOYED)).toBe("https://hooks.example.com:8443/a");
    expect(checkPushUrl("https://93.184.216.34/", DEPLOYED)).toBe("https://93.184.216.34/");
    expect(checkPushUrl("https://[2606:4700::6810:84e5]/", DEPLOYED)).toBe("https://[2606:4700::6810:84e5]/");
  });

  it("needs https on a deployed broker, and http only to loopback locally", () => {
    expect(refusal("http://hooks.example.com/")).toContain("the scheme must be https");
    expect(refusal("http://hooks.example.com/", LOCAL)).toContain("http:// only to loopback hosts");
    expect(refusal("ftp://hooks.example.com/")).toContain("the scheme must be https");
    expect(refusal("hooks.example.com/x")).toContain("not an absolute URL");
    expect(checkPushUrl("http://127.0.0.1:9000/hook", LOCAL)).toBe("http://127.0.0.1:9000/hook");
    expect(checkPushUrl("http://localhost:9000/hook", LOCAL)).toBe("http://localhost:9000/hook");
    expect(checkPushUrl("https://[::1]:9000/", LOCAL)).toBe("https://[::1]:9000/");
  });

  it("refuses loopback unless PUSH_ALLOW_LOOPBACK=1, in every spelling the URL parser accepts", () => {
    for (const url of [
      "https://127.0.0.1/", "https://127.8.9.10/", "https://localhost/", "https://api.localhost/", "https://localhost./",
      "https://[::1]/", "https://2130706433/", "https://0x7f000001/", "https://0x7f.1/", "https://127.1/", "https://0177.0.0.1/",
      "https://[::ffff:127.0.0.1]/", "https://[::ffff:7f00:1]/", "https://[0:0:0:0:0:0:0:1]/",
    ]) {
      expect(refusal(url), url).toContain("PUSH_ALLOW_LOOPBACK");
    }
  });

  it("refuses private, link-local, shared, reserved and metadata addresses even with loopback allowed", () => {
    const cases: [string, string][] = [
      ["https://10.0.0.1/", "private"], ["https://172.16.5.4/", "private"], ["https://172.31.255.255/", "private"],
      ["https://192.168.1.1/", "private"], ["https://100.64.0.1/", "private"], ["https://[fd00::1]/", "private"],
      ["https://[fc00::1]/", "private"], ["https://169.254.169.254/latest/meta-data", "link-local"], ["https://[fe80::1]/", "link-local"],
      ["https://0.0.0.0/", "reserved"], ["https://[::]/", "reserved"], ["https://224.0.0.1/", "reserved"], ["https://255.255.255.255/", "reserved"],
      ["https://192.0.2.10/", "reserved"], ["https://[ff02::1]/", "reserved"], ["https://[2001:db8::1]/", "reserved"],
      ["https://[::ffff:10.1.2.3]/", "private"], ["https://[64:ff9b::a9fe:a9fe]/", "link-local"], ["https://[2002:c0a8:0101::]/", "private"],
      ["https://0xa9.0xfe.0xa9.0xfe/", "link-local"], ["https://3232235777/", "private"],
    ];
    for (const [url, cls] of cases) {
      for (const policy of [DEPLOYED, LOCAL]) expect(refusal(url, policy), url).toContain(`is a ${cls} address`);
    }
    expect(checkPushUrl("https://172.32.0.1/", DEPLOYED)).toBe("https://172.32.0.1/"); // just outside 172.16/12
    expect(checkPushUrl("https://100.128.0.1/", DEPLOYED)).toBe("https://100.128.0.1/"); // just outside 100.64/10
  });

  it("refuses wildcard DNS names that resolve to the address in them or to loopback (#28 item 7), whatever the policy", () => {
    for (const policy of [DEPLOYED, LOCAL]) {
      for (const url of ["https://127.0.0.1.nip.io/", "https://app.10-0-0-1.sslip.io/hook", "http://localtest.me:8080/", "https://x.lvh.me/",
        "https://a.b.localhost.direct/", "https://NIP.IO./", "https://7f000001.nip.io/"]) {
        expect(refusal(url, policy), url).toContain("is a wildcard DNS name");
      }
    }
    expect(classifyHost("notnip.io")).toBe("public"); // a suffix only after a dot
    expect(checkPushUrl("https://hooks.nip.io.example.com/", DEPLOYED)).toBe("https://hooks.nip.io.example.com/");
  });

  it("refuses a host with an empty label (localhost.., a.internal..): it would slip past the name rules", () => {
    for (const policy of [DEPLOYED, LOCAL]) {
      for (const url of ["https://localhost../", "https://foo.localhost../", "https://a.internal../", "https://intranet../", "https://.example.com/", "https://a..example.com/"]) {
        expect(refusal(url, policy), url).toContain("has an empty label");
      }
    }
    expect(checkPushUrl("https://hooks.example.com./", DEPLOYED)).toBe("https://hooks.example.com./"); // one trailing dot: the DNS root
  });

  it("classifies IPv4 embedded by SIIT (::ffff:0:a.b.c.d) as IPv4, and refuses Teredo and local-use NAT64 (64:ff9b:1::/48)", () => {
    expect(refusal("https://[::ffff:0:7f00:1]/")).toContain("PUSH_ALLOW_LOOPBACK");
    expect(refusal("https://[::ffff:0:a00:1]/")).toContain("is a private address");
    expect(refusal("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/")).toContain("is a reserved address");
    expect(refusal("https://[64:ff9b:1::a00:1]/")).toContain("is a reserved address");
    expect(checkPushUrl("https://[2001:4860:4860::8888]/", DEPLOYED)).toBe("https://[2001:4860:4860::8888]/");
  });

  it("refuses local network names and credentials in the URL", () => {
    for (const url of ["https://intranet/", "https://printer.local/", "https://db.internal/", "https://nas.home.arpa/", "https://x.corp/"]) {
      expect(refusal(url, LOCAL), url).toContain("local network name");
    }
    expect(refusal("https://user:pw@hooks.example.com/")).toContain("credentials in the URL");
    expect(refusal("https://user@hooks.example.com/")).toContain("credentials in the URL");
    expect(refusal(`https://hooks.example.com/${"a".repeat(2100)}`)).toContain("longer than 2048");
  });

  it("PUSH_ALLOWED_HOSTS narrows the hosts (exact, or *.suffix for subdomains) and never lifts a rule", () => {
    const p = pushUrlPolicy(undefined, " api.example.com, *.hooks.example.net ,10.0.0.1");
    expect(checkPushUrl("https://api.example.com/x", p)).toBe("https://api.example.com/x");
    expect(checkPushUrl("https://a.b.hooks.example.net/x", p)).toBe("https://a.b.hooks.example.net/x");
    expect(refusal("https://hooks.example.net/", p)).toContain("not in PUSH_ALLOWED_HOSTS"); // *.x is subdomains only
    expect(refusal("https://evil.example.com/", p)).toContain("not in PUSH_ALLOWED_HOSTS");
    expect(refusal("https://10.0.0.1/", p)).toContain("private address");
    expect(hostMatches("xhooks.example.net", "*.hooks.example.net")).toBe(false);
  });

  it("classifies hosts and parses IPv6 forms", () => {
    expect(classifyHost("example.com")).toBe("public");
    expect(classifyHost("8.8.8.8")).toBe("public");
    expect(classifyHost("[2606:4700:4700::1111]")).toBe("public");
    expect(parseIpv6("::1")).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIpv6("1::")).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIpv6("::ffff:1.2.3.4")).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
    expect(parseIpv6("1:2:3:4:5:6:7:8")).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIpv6("1:2:3:4:5:6:7")).toBeNull();
    expect(parseIpv6("1::2::3")).toBeNull();
    expect(parseIpv6("1:2:3:4:5:6:7:8::")).toBeNull();
    expect(classifyHost("[not-ipv6]")).toBe("reserved");
  });
});
