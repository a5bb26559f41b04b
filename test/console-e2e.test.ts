/**
 * The web console end to end in a real browser: headless Chromium (Debian's `chromium` package,
 * driven by playwright-core; no browser download) against a real edge (Node entry, libSQL file) and
 * the loopback GPU node, all on loopback. One browser and one edge serve every case: sign in with
 * a key, ask a library problem (library answer, 0 GPU tokens) and a new one (asked from the
 * keyboard; the model's answer streams in; a failed one leaves only its error), find the console's
 * own not-found page and icon, accept a flywheel item, see a node's charts drawn with data over the
 * last hour, create and revoke a key (one role name, public, as in the API), upload a block in
 * chunks through the upload grant, fit every page into a 390 px phone, and find that a public key
 * sees no admin pages and is refused them (403) on the server. Each page gets an axe-core
 * check (no serious or critical violations) and a screenshot under test-results/console/; the
 * playground's (desktop and phone) and the nodes page's are copied to docs/img/ for the README when
 * KVGRAFT_UPDATE_SCREENSHOTS=1 (a plain run leaves the checkout as it was).
 * Skips, saying why, where no chromium executable is installed (`.ci/run` installs it; CHROMIUM_PATH
 * names another).
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { addSolution, registerBlock, registerProblem } from "../edge/db/library.js";
import { type EdgeServer, startEdgeServer } from "../edge/runtime/node.js";
import { createApiKey } from "../edge/services/keys.service.js";
import { sha256Hex } from "../shared/hash.js";
import { sendHeartbeat } from "../shared/heartbeat.js";
import { silentLogger } from "../shared/http/logger.js";
import { normalizeProblem, problemTemplate } from "../shared/normalize.js";
import { LIMITS } from "../shared/protocol.js";
import { type LoopbackGpu, manifestFor, startLoopbackGpu } from "./helpers/loopback-gpu.js";

const root = join(import.meta.dirname, "..");
/** The browser: CHROMIUM_PATH if set, else Debian's. */
const CHROMIUM_CANDIDATES = process.env.CHROMIUM_PATH
  ? [process.env.CHROMIUM_PATH]
  : ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
const CHROMIUM = CHROMIUM_CANDIDATES.find((p) => existsSync(p)) ?? null;
const NO_CHROMIUM = CHROMIUM
  ? null
  : `no chromium executable (${CHROMIUM_CANDIDATES.join(", ")}): install Debian's chromium package to run the console's browser tests`;
const SHOTS = join(root, "test-results", "console");
const SECRET = "console-e2e-secret-0123456789abcdef";
/** A rewording of the first starter problem (test/fixtures/router-dev-rewordings.jsonl): routed "similar". */
const REWORDED = "How much change is Sam owed if he pays with a $20 bill for 12 apples priced at $0.75 each?";
const NEW_PROBLEM = "A farmer has 17 sheep and buys 26 more, then sells 9. How many sheep are left?";
/** The state size the loopback node's deposits claim: 24 MiB, so the tier sizes read in MB. */
const BLOCK_BYTES = 24 * 2 ** 20;

const starter = readFileSync(join(root, "edge", "starter-library.jsonl"), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .slice(0, 3)
  .map((l) => JSON.parse(l) as { problem: string; solution: string; program: string; answer: string });

let dir: string;
let gpu: LoopbackGpu;
let edge: EdgeServer;
let browser: Browser;
let admin: { context: BrowserContext; page: Page };
let adminKey: string;
let userKey: string;
const axeSource = readFileSync(join(root, "node_modules", "axe-core", "axe.min.js"), "utf8");
/** Console messages that report a content security policy violation, from every page. */
const cspViolations: string[] = [];

/** A library entry as a deposit makes it, its block held by the loopback node (hot in its /health). */
async function storeStarter(entry: (typeof starter)[number]) {
  const normalizedText = normalizeProblem(entry.problem);
  const { template, params } = problemTemplate(normalizedText);
  const { problem } = await registerProblem(edge.db, {
    normalizedText,
    fingerprint: await sha256Hex(normalizedText),
    template,
    params,
  });
  await addSolution(edge.db, {
    problemId: problem.id,
    worked: entry.solution,
    program: entry.program,
    answer: entry.answer,
    parametric: true,
    verified: true,
    verification: { method: "console-e2e" },
  });
  const res = await fetch(`${gpu.url}/v1/blocks`, {
    method: "POST",
    body: JSON.stringify({ text: `${entry.problem}\n${entry.solution}` }),
  });
  const manifest = (await res.json()) as Parameters<typeof registerBlock>[1]["manifest"] & { sha256: string };
  await registerBlock(edge.db, {
    sha256: manifest.sha256,
    problemId: problem.id,
    manifest: {
      ...manifest,
      modelFingerprint: { sha256: "f".repeat(64) },
      engineFingerprint: { sha256: "f".repeat(64) },
    },
    state: "ready",
    nodeId: null,
  });
}

async function signedIn(key: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  page.on("console", (m) => {
    if (/content security policy/i.test(m.text())) cspViolations.push(m.text());
  });
  await page.goto(`${edge.url}/console/signin`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${edge.url}/console/playground`);
  return { context, page };
}

/** Runs axe-core on the page: no serious or critical violations (labels, contrast, names, ...). */
async function expectAccessible(page: Page): Promise<void> {
  // Evaluated through the DevTools protocol: the page's CSP (no inline script) does not apply.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe;
    const result = await axe.run();
    return (result.violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
  expect(violations, page.url()).toEqual([]);
}

/** Copies a screenshot to docs/img/ for the README, only when asked to (KVGRAFT_UPDATE_SCREENSHOTS=1). */
function readmeShot(path: string, name: string): void {
  if (process.env.KVGRAFT_UPDATE_SCREENSHOTS === "1") copyFileSync(path, join(root, "docs", "img", name));
}

async function shot(page: Page, name: string): Promise<string> {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

beforeAll(async () => {
  if (!CHROMIUM) return;
  mkdirSync(SHOTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), "kvgraft-console-"));
  gpu = await startLoopbackGpu({ sandbox: false, depositBytes: BLOCK_BYTES });
  edge = await startEdgeServer({
    env: {
      LIBSQL_URL: `file:${join(dir, "edge.db")}`,
      KVGRAFT_GPU_URL: gpu.url,
      KVGRAFT_GPU_SECRET: SECRET,
      KVGRAFT_RATE_LIMIT: "100000",
      KVGRAFT_FLYWHEEL: "on",
    },
    port: 0,
    host: "127.0.0.1",
    logger: silentLogger,
  });
  adminKey = edge.generatedAdminKey as string;
  userKey = (await createApiKey(edge.db, { role: "public", label: "console user" })).key;
  for (const entry of starter) await storeStarter(entry);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await edge?.close();
  await gpu?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

beforeEach((ctx) => ctx.skip(NO_CHROMIUM !== null, NO_CHROMIUM ?? undefined));

describe("web console in Chromium", () => {
  it("signs in with a key posted in a form, kept in an HttpOnly SameSite=Strict cookie, never in a URL", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const res = await page.goto(`${edge.url}/console/playground`);
    expect(page.url()).toBe(`${edge.url}/console/signin`);
    const csp = res?.headers()["content-security-policy"] ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(await page.textContent("main")).toMatch(
      /A public key opens the playground and the library; an admin key also opens the flywheel, the nodes and tiers, the keys and the uploads pages/,
    );
    await expectAccessible(page);
    await shot(page, "signin");
    await page.getByLabel("API key").fill("kvg_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not valid");
    await context.close();

    admin = await signedIn(adminKey);
    const [cookie] = await admin.context.cookies();
    expect(cookie).toMatchObject({
      name: "kvgraft_console",
      httpOnly: true,
      sameSite: "Strict",
      path: "/console",
    });
    expect(admin.page.url()).not.toContain(adminKey);
    // The cookie opens the console only: the API still wants the key as a bearer header.
    const api = await admin.page.request.get(`${edge.url}/admin/keys`);
    expect(api.status()).toBe(401);
  });

  it("asks a library problem by its example: the library answer, 0 GPU tokens", async () => {
    const { page } = admin;
    const [first] = starter;
    await page.getByRole("button", { name: normalizeProblem(first?.problem ?? "") }).click();
    await page.waitForSelector("#answer");
    expect(await page.textContent("#source")).toBe("library");
    expect(await page.textContent("#gpu-tokens")).toBe("0");
    expect(await page.textContent("#answer")).toBe(first?.answer);
    expect(await page.textContent("#verified")).toContain("yes");
    expect(await page.textContent("#energy")).toBe("not measured");
    await expectAccessible(page);
    readmeShot(await shot(page, "playground"), "console-playground.png");
  });

  it("asks a new problem from the keyboard (Tab to Ask, Enter): the model's answer streams in and it is queued", async () => {
    const { page } = admin;
    await page.goto(`${edge.url}/console/playground`);
    await page.getByLabel("Problem").fill(NEW_PROBLEM);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement?.id")).toBe("ask");
    await page.keyboard.press("Enter");
    // Streamed: the text the GPU node generated shows, then the answer panel.
    await page.waitForSelector("#answer");
    expect(page.url()).toBe(`${edge.url}/console/playground`);
    expect(await page.textContent("#stream-text")).toBe("Let me think. No idea.");
    expect(await page.textContent("#source")).toBe("model");
    expect(Number(await page.textContent("#gpu-tokens"))).toBeGreaterThan(0);
    // The loopback node has no nvidia-smi: its solve reports no energy, and the tooltip says how it is measured.
    expect(await page.textContent("#energy")).toBe("not measured");
    expect(await page.getByText("Energy", { exact: true }).getAttribute("title")).toContain(
      "nvidia-smi power draw sampled every 100 ms over this request's GPU work",
    );
    expect(await page.textContent(".answer")).toContain("queued for a heavier solve");
    expect(gpu.requests).toContain("/v1/solve");
    await expectAccessible(page);
    await shot(page, "playground-model");
    // Mode `verified` answers only from the library: nothing for a new problem, no GPU call.
    await page.getByLabel("Mode").selectOption("verified");
    await page.getByRole("button", { name: "Ask" }).click();
    expect(await page.textContent("#source")).toBe("none");
    expect(await page.textContent("#gpu-tokens")).toBe("0");
    expect(await page.getByLabel("Mode").inputValue()).toBe("verified");
  });

  it("a question that fails leaves the error, and no empty box of generated text", async () => {
    const { page } = admin;
    await page.goto(`${edge.url}/console/playground`);
    await page.getByLabel("Problem").fill(NEW_PROBLEM);
    // A mode the edge does not know: refused (400) before any text is generated.
    await page
      .getByLabel("Mode")
      .evaluate((select) =>
        select.insertAdjacentHTML("beforeend", '<option value="bogus" selected>bogus</option>'),
      );
    await page.getByRole("button", { name: "Ask" }).click();
    await expect
      .poll(() => page.locator("#answer-panel [role=alert]").textContent())
      .toContain("The solve failed");
    expect(await page.locator("#stream-section").isHidden()).toBe(true);
    await expectAccessible(page);
  });

  it("an unknown console address is the console's own not-found page; every page names its icon", async () => {
    const { page } = admin;
    const res = await page.goto(`${edge.url}/console/nope`);
    expect(res?.status()).toBe(404);
    expect(res?.headers()["content-type"]).toContain("text/html");
    expect(await page.textContent("h1")).toBe("Not found");
    expect(await page.getByRole("alert").textContent()).toBe(
      "There is no console page at /console/nope. (page_not_found, HTTP 404)",
    );
    expect(await page.getByRole("navigation").getByRole("link").count()).toBe(6);
    await expectAccessible(page);
    await shot(page, "not-found");
    // The icon is the console's own (no request for a /favicon.ico the edge does not have).
    const href = await page.locator('link[rel="icon"]').getAttribute("href");
    expect(href).toBe("/console/assets/favicon.svg");
    const icon = await page.request.get(`${edge.url}${href}`);
    expect(icon.status()).toBe(200);
    expect(icon.headers()["content-type"]).toBe("image/svg+xml");
  });

  it("browses and searches the library; a problem's page shows its program, block and hits", async () => {
    const { page } = admin;
    await page.goto(`${edge.url}/console/library`);
    expect(await page.locator("tbody tr").count()).toBe(starter.length);
    await expectAccessible(page);
    await shot(page, "library");
    await page.getByLabel("Search problems").fill("apples");
    await page.getByRole("button", { name: "Search" }).click();
    expect(await page.locator("tbody tr").count()).toBe(1);
    await page.locator("tbody a").first().click();
    expect(await page.textContent("#hits")).toContain("1 library");
    expect(await page.textContent("main")).toContain("print(fmt(paid - count * price))");
    expect(await page.textContent("main")).toContain("Held by");
    await expectAccessible(page);
    await shot(page, "library-problem");
  });

  it("accepts a flywheel item as admin with a reference answer", async () => {
    const { page } = admin;
    await page.goto(`${edge.url}/console/flywheel`);
    const row = page.locator("tr", { hasText: NEW_PROBLEM });
    expect(await row.locator(".status").textContent()).toBe("queued");
    await expectAccessible(page);
    await row.getByLabel("Reference answer").fill("34");
    await row.getByRole("button", { name: "Accept" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toContain("Reference answer 34 set");
    expect(await page.locator("tr", { hasText: NEW_PROBLEM }).locator(".reference").textContent()).toBe("34");
    await shot(page, "flywheel");
  });

  it("draws each node's tier charts (bytes and blocks) from the samples of its views", async () => {
    const { page } = admin;
    await page.goto(`${edge.url}/console/nodes`);
    // The first view is the first sample: each chart says so instead of drawing a lone point unexplained.
    await page.waitForSelector(".charts canvas");
    expect(await page.locator(".chart-note").first().textContent()).toContain("One sample so far");
    // A reworded library problem is grafted with its block (the loopback node restores it "hot").
    await page.goto(`${edge.url}/console/playground`);
    await page.getByLabel("Problem").fill(REWORDED);
    await page.getByRole("button", { name: "Ask" }).click();
    expect(await page.textContent("#source")).toBe("graft");
    expect(await page.textContent("#stream-text")).toBe("grafted\n42");
    await page.goto(`${edge.url}/console/nodes`);
    await new Promise((r) => setTimeout(r, 1_100));
    await page.reload();
    await page.waitForSelector(".charts canvas");
    const data = JSON.parse((await page.textContent("#node-samples")) ?? "{}") as {
      times: number[];
      end: number;
      windowS: number;
      nodes: { charts: { title: string; unit: string; series: { values: (number | null)[] }[] }[] }[];
    };
    expect(data.times.length).toBeGreaterThanOrEqual(2);
    expect(await page.locator(".chart-note").count()).toBe(0);
    // The time axis is the last hour up to this view's sample, whatever the samples span.
    expect(data).toMatchObject({ end: data.times.at(-1), windowS: 3600 });
    const charts = data.nodes[0]?.charts ?? [];
    const tiers = charts.find((c) => c.title === "Blocks by tier");
    expect(tiers?.series[0]?.values.every((v) => v === starter.length)).toBe(true);
    // Bytes by tier in MB (10^6 bytes): the three blocks are hot (in slots) and cold (on disk), none warm.
    const heldMb = Math.round(((starter.length * BLOCK_BYTES) / 1e6) * 1000) / 1000;
    const bytes = charts.find((c) => c.title === "Bytes by tier");
    expect(bytes?.unit).toBe("MB");
    expect(bytes?.series.map((s) => s.values.at(-1))).toEqual([heldMb, 0, heldMb]);
    expect(bytes?.series[0]?.values.every((v) => v === heldMb)).toBe(true);
    expect(await page.locator("figure", { hasText: "Bytes by tier (MB)" }).locator("canvas").count()).toBe(1);
    expect(await page.textContent(".tier-bytes")).toBe("75.5 MB hot, 0 B warm, 75.5 MB cold");
    // The loopback node reports a restore of 0.1 ms from the hot tier.
    const restore = charts.find((c) => c.title === "Mean restore latency by tier");
    expect(restore?.series[0]?.values.at(-1)).toBe(0.1);
    expect(await page.locator(".charts canvas").count()).toBe(4);
    expect(await page.textContent("main")).toContain("hot 100%, warm 0%, cold 0% of 1");
    expect(await page.textContent(".restore-latency")).toBe("hot 0.1 ms, warm none yet, cold none yet");
    // The same counters in the Prometheus text of the API.
    const metrics = await fetch(`${edge.url}/admin/nodes/metrics`, {
      headers: { authorization: `Bearer ${adminKey}` },
    });
    const text = await metrics.text();
    expect(text).toContain('kvgraft_edge_node_restores_total{node="default",tier="hot"} 1');
    expect(text).toContain('kvgraft_edge_node_shed_total{node="default"} 0');
    expect(await page.textContent(".health")).toContain("live");
    await expectAccessible(page);
    readmeShot(await shot(page, "nodes"), "console-nodes.png");
    // A node of the previous version reports no tier bytes: accepted, and shown as "n/a". It
    // registers draining (so down), which keeps it out of the routing of the tests after this one.
    const { model, engine } = await manifestFor("");
    await sendHeartbeat(
      { edgeUrl: edge.url, secret: SECRET },
      {
        id: "older-node",
        url: "http://127.0.0.1:9",
        status: "draining",
        model,
        engine,
        capacity: { slots: 1, queueCapacity: 4, tiers: ["hot", "warm", "cold"] },
        tiers: { hot: [], warm: [], coldCount: 0 },
        queue: { depth: 0, capacity: 4 },
      },
    );
    await page.reload();
    const older = page.locator("section", { has: page.getByRole("heading", { name: "older-node" }) });
    expect(await older.locator(".tier-bytes").textContent()).toBe(
      "n/a (the node does not report tier sizes)",
    );
    expect(await older.locator(".tier-blocks").textContent()).toBe("0 hot, 0 warm, 0 cold blocks");
  });

  it("creates a key, shows its plaintext once, and revokes it", async () => {
    const { page } = admin;
    await page.goto(`${edge.url}/console/keys`);
    // One name for the role, as the API has it: public.
    expect(await page.getByLabel("Role").locator("option").allTextContents()).toEqual([
      "public (playground, library, /v1)",
      "admin (everything)",
    ]);
    await page.getByLabel("Label").fill("reader");
    await page.getByRole("button", { name: "Create" }).click();
    expect(await page.textContent("#created-title")).toBe("New public key");
    expect(await page.locator("tr", { hasText: "reader" }).locator("td").nth(2).textContent()).toBe("public");
    expect(await page.textContent("#created-key")).toMatch(/^kvg_[0-9A-Za-z]{8}_[0-9A-Za-z]{32}$/);
    await expectAccessible(page);
    await shot(page, "keys");
    await page.goto(`${edge.url}/console/keys`);
    expect(await page.locator("#created-key").count()).toBe(0);
    await page.getByRole("button", { name: "Revoke reader" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toBe("Revoked reader.");
    expect(await page.locator("tr", { hasText: "reader" }).getByRole("button").count()).toBe(0);
  });

  it("uploads a block through the upload grant in chunks, with progress, and registers it", async () => {
    const { page } = admin;
    const manifest = await manifestFor("a block built elsewhere");
    // Two chunks of the grant's 8 MiB.
    const state = Buffer.alloc(LIMITS.importChunkBytes + 1024, 7);
    await page.goto(`${edge.url}/console/uploads`);
    await expectAccessible(page);
    const [first] = starter;
    await page.getByLabel("Problem").selectOption({ label: normalizeProblem(first?.problem ?? "") });
    await page.getByLabel("Manifest (JSON)").setInputFiles({
      name: "manifest.json",
      mimeType: "application/json",
      buffer: Buffer.from(JSON.stringify(manifest)),
    });
    await page.getByLabel("Block state file").setInputFiles({
      name: "block.state",
      mimeType: "application/octet-stream",
      buffer: state,
    });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect
      .poll(() => page.getByRole("status").textContent(), { timeout: 20_000 })
      .toBe(`Uploaded and registered block ${manifest.sha256}.`);
    expect(await page.locator("#upload-progress").evaluate((e) => (e as { value: number }).value)).toBe(2);
    await shot(page, "uploads");
    // The block is the problem's now (its library page lists it).
    await page.goto(`${edge.url}/console/library?q=apples`);
    await page.locator("tbody a").first().click();
    expect(await page.textContent("main")).toContain(manifest.sha256);
  });

  it("fits a 390 px phone: every page as wide as the screen, the whole navigation reachable", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    await context.addCookies(await admin.context.cookies());
    const page = await context.newPage();
    for (const path of ["playground", "library", "flywheel", "nodes", "keys", "uploads", "nope"]) {
      await page.goto(`${edge.url}/console/${path}`);
      // A wide table scrolls inside its own box (.wide), which must fit. (A string: the test's
      // TypeScript has no DOM types.)
      const widths = (await page.evaluate(`(() => {
        const wide = [...document.querySelectorAll("body *")]
          .filter((e) => !e.parentElement?.closest(".wide") && e.getBoundingClientRect().right > 390.5)
          .map((e) => e.tagName.toLowerCase() + "." + e.className + " " + Math.round(e.getBoundingClientRect().right));
        return { page: document.documentElement.scrollWidth, wide: wide.slice(0, 8) };
      })()`)) as { page: number; wide: string[] };
      expect(widths, path).toEqual({ page: 390, wide: [] });
      // Each page's link is on the screen (the navigation wraps; nothing is cut off).
      for (const link of await page.getByRole("navigation").getByRole("link").all()) {
        const box = await link.boundingBox();
        expect(box && box.x >= 0 && box.x + box.width <= 390, `${path}: ${await link.textContent()}`).toBe(
          true,
        );
      }
      const file = await shot(page, `mobile-${path}`);
      if (path === "playground") readmeShot(file, "console-mobile.png");
    }
    await context.close();
  });

  it("refuses a cross-site form post (CSRF) and runs no inline script", async () => {
    const res = await admin.page.request.post(`${edge.url}/console/keys`, {
      form: { label: "evil", role: "admin" },
      headers: { origin: "http://evil.example" },
    });
    expect(res.status()).toBe(403);
    // The upload steps carry JSON or bytes (which `csrf` does not look at): they check the Origin too.
    const step = await admin.page.request.post(`${edge.url}/console/uploads/imports`, {
      data: "{}",
      headers: {
        origin: "http://evil.example",
        "x-kvgraft-upload-grant": "x",
        "content-type": "application/json",
      },
    });
    expect(step.status()).toBe(403);
    expect(cspViolations).toEqual([]);
  });

  it("a public key: no admin links, and every admin page and action is 403 on the server", async () => {
    const user = await signedIn(userKey);
    expect(await user.page.textContent(".role")).toBe("public key");
    const nav = (await user.page.getByRole("navigation").textContent()) ?? "";
    expect(nav).toContain("Playground");
    expect(nav).not.toContain("Flywheel");
    expect(nav).not.toContain("Keys");
    expect(nav).not.toContain("Uploads");
    for (const path of ["/console/flywheel", "/console/nodes", "/console/keys", "/console/uploads"]) {
      const res = await user.page.goto(`${edge.url}${path}`);
      expect(res?.status(), path).toBe(403);
    }
    await expectAccessible(user.page);
    await shot(user.page, "user-refused");
    // The public pages work for it, without their admin parts (which nodes hold a block).
    await user.page.goto(`${edge.url}/console/library?q=apples`);
    await user.page.locator("tbody a").first().click();
    expect(await user.page.textContent("main")).toContain("Worked solution");
    expect(await user.page.textContent("main")).not.toContain("Held by");
    await user.page.goto(`${edge.url}/console/playground`);
    expect(await user.page.getByRole("button", { name: "Ask" }).count()).toBe(1);
    const post = await user.page.request.post(`${edge.url}/console/keys`, {
      form: { label: "escalate", role: "admin" },
      headers: { origin: edge.url },
    });
    expect(post.status()).toBe(403);
    // Revoked through the API, the key's console session ends at its next page.
    const keys = (await (
      await fetch(`${edge.url}/admin/keys`, { headers: { authorization: `Bearer ${adminKey}` } })
    ).json()) as { keys: { id: string; label: string }[] };
    const id = keys.keys.find((k) => k.label === "console user")?.id;
    await fetch(`${edge.url}/admin/keys/${id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${adminKey}` },
    });
    await user.page.goto(`${edge.url}/console/playground`);
    expect(user.page.url()).toBe(`${edge.url}/console/signin`);
    await user.context.close();
  });
});
