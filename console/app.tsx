/**
 * The MortarMQ Edge web console (docs/console.md): a single page served by
 * the broker at /console, reading the tenant-scoped JSON APIs of the same
 * origin. Pages by URL hash (#/overview, #/topics, #/topics/<name>,
 * #/mailboxes, #/mailboxes/<address>, #/agents, #/usage): no token or
 * tenant ever goes into a URL. An open broker needs no login; otherwise a
 * tenant token or ADMIN_TOKEN is asked for and kept in sessionStorage.
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import type { WhoamiAnswer } from "../wire/admin/console";
import { ApiError, chooseTenant, currentTenant, request, setToken, token, whoami } from "./api";
import { message } from "./ui";
import { Overview } from "./pages/overview";
import { Topics } from "./pages/topics";
import { Topic } from "./pages/topic";
import { Mailbox, Mailboxes } from "./pages/mailboxes";
import { Agents } from "./pages/agents";
import { Usage } from "./pages/usage";

const PAGES = [["overview", "Overview"], ["topics", "Topics"], ["mailboxes", "Mailboxes"], ["agents", "Agents"], ["usage", "Usage"]] as const;

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function Login({ error, onToken }: { error: string | null; onToken: (t: string) => void }) {
  const [t, setT] = useState("");
  return (
    <main id="main" class="login">
      <h1>MortarMQ Edge console</h1>
      <form onSubmit={(e) => { e.preventDefault(); onToken(t.trim()); }}>
        <p>This broker needs a token: a tenant's token, or the operator's ADMIN_TOKEN. It is kept in this tab only (sessionStorage).</p>
        <label>Token <input type="password" name="token" autoComplete="off" required value={t} onInput={(e) => setT(e.currentTarget.value)} /></label>
        <button>Sign in</button>
        {error && <p class="error" role="alert">{error}</p>}
      </form>
    </main>
  );
}

function TenantSwitch({ tenant, onSwitch }: { tenant: string; onSwitch: (t: string) => void }) {
  const [ids, setIds] = useState<string[]>([]);
  useEffect(() => {
    request<{ tenants: { id: string; deleted_at: string | null }[] }>("GET", "/admin/tenants", undefined, false)
      .then((r) => setIds(r.tenants.filter((x) => x.deleted_at === null).map((x) => x.id)), () => setIds([]));
  }, []);
  const all = [...new Set(["default", ...ids, tenant])].sort();
  return (
    <label class="tenant">Tenant <select value={tenant} onChange={(e) => onSwitch(e.currentTarget.value)}>
      {all.map((id) => <option value={id}>{id}</option>)}
    </select></label>
  );
}

function App() {
  const [who, setWho] = useState<WhoamiAnswer | null>(null);
  const [loginError, setLoginError] = useState<string | null>(null);
  const [needLogin, setNeedLogin] = useState(false);
  const [tenant, setTenant] = useState("");
  const hash = useHash();

  const signIn = async () => {
    try {
      const w = await whoami();
      setWho(w);
      setTenant(currentTenant());
      setNeedLogin(false);
      setLoginError(null);
    } catch (e) {
      setNeedLogin(true);
      setWho(null);
      if (token() !== "") setLoginError(e instanceof ApiError && e.status === 401 ? `The broker refused the token: ${e.message}` : message(e));
      setToken("");
    }
  };
  useEffect(() => void signIn(), []);

  if (needLogin) return <Login error={loginError} onToken={(t) => { setToken(t); void signIn(); }} />;
  if (!who) return <main id="main"><p role="status">Connecting…</p></main>;

  const [, page = "overview", ...rest] = hash.replace(/^#/, "").split("/");
  const arg = decodeURIComponent(rest.join("/"));
  const switchTo = (t: string) => {
    chooseTenant(t);
    setTenant(currentTenant());
  };
  let body;
  if (page === "topics" && arg) body = <Topic tenant={tenant} name={arg} />;
  else if (page === "topics") body = <Topics tenant={tenant} />;
  else if (page === "mailboxes" && arg) body = <Mailbox tenant={tenant} address={arg} />;
  else if (page === "mailboxes") body = <Mailboxes tenant={tenant} />;
  else if (page === "agents") body = <Agents tenant={tenant} />;
  else if (page === "usage") body = <Usage tenant={tenant} onSwitch={switchTo} />;
  else body = <Overview tenant={tenant} />;
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <h1>MortarMQ Edge</h1>
        <nav aria-label="Pages">
          <ul>{PAGES.map(([id, label]) => <li><a href={`#/${id}`} aria-current={page === id ? "page" : undefined}>{label}</a></li>)}</ul>
        </nav>
        <div class="who">
          {who.role === "operator" ? <TenantSwitch tenant={tenant} onSwitch={switchTo} /> : <span>Tenant {tenant}</span>}
          {who.auth === "open" ? <span class="badge">open broker</span> : <button onClick={() => { setToken(""); setWho(null); setNeedLogin(true); setLoginError(null); }}>Sign out</button>}
        </div>
      </header>
      <main id="main" tabIndex={-1} key={tenant}>{body}</main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
