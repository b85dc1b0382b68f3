/**
 * GET /console through the real Worker and its ASSETS binding (wrangler.toml
 * `[assets]`, built by client/scripts/build-console.ts before the pool starts):
 * the page, its hashed bundle, the Content-Security-Policy, and no way out of
 * the asset directory.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("GET /console", () => {
  it("serves the page with a strict CSP and no inline script", async () => {
    const res = await SELF.fetch("http://broker/console");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // every script element loads a file
    expect(html).not.toMatch(/\sstyle=|<style/);
    const js = /src="\/console\/assets\/(app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    const css = /href="\/console\/assets\/(app-[A-Z0-9]+\.css)"/.exec(html)?.[1];
    expect(js).toBeTruthy();
    expect(css).toBeTruthy();
    const bundle = await SELF.fetch(`http://broker/console/assets/${js}`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get("content-type")).toMatch(/javascript/);
    expect(bundle.headers.get("cache-control")).toContain("immutable");
    expect((await bundle.text()).length).toBeGreaterThan(1000);
    expect((await SELF.fetch(`http://broker/console/assets/${css}`)).headers.get("content-type")).toMatch(/^text\/css/);
  });

  it("answers 404 for files that are not bundled assets", async () => {
    for (const p of ["/console/assets/nope.js", "/console/assets/index.html", "/console/assets/..%2Fwrangler.toml", "/index.html", "/app.css"]) {
      const res = await SELF.fetch(`http://broker${p}`);
      expect(res.status, p).toBe(404);
    }
  });
});
