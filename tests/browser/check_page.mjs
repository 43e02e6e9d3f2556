#!/usr/bin/env node
// Checks one of kiln's HTML report pages in headless Chromium (through
// playwright-core, driving the system's chromium; no browser is downloaded).
//
// Usage: node check_page.mjs PAGE.html SCREENSHOT.png [--min-charts N]
//
// The page contract: <body data-charts-expected="N"> is in the page's HTML, and
// its script sets document.body.dataset.chartsDrawn = M once it has drawn all
// its charts (M = the charts it created without throwing).
//
// It fails (exit 1, one `check_page: FAIL: ...` line per problem) when:
//   - the page requests anything but its own file (data: URLs aside); such
//     requests are also aborted, so nothing leaves the machine;
//   - the console logs an error, or the page throws (warnings are printed only);
//   - data-charts-drawn is not set within 30 s of the load event, differs from
//     data-charts-expected, or data-charts-expected is below --min-charts;
//   - a <canvas> has a zero width or height, or has no pixel with alpha > 0.
// It always writes a full-page screenshot when the page loaded at all.
// Exit 0: passed; 77: skipped (no chromium, or playwright-core not installed:
// run scripts/setup.sh); 2: usage error.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const PREFIX = "check_page:";
const OVERALL_TIMEOUT_MS = 90_000;
const DRAWN_TIMEOUT_MS = 30_000;

function usage(msg) {
  if (msg) console.error(`${PREFIX} error: ${msg}`);
  console.error("usage: node check_page.mjs PAGE.html SCREENSHOT.png [--min-charts N]");
  process.exit(2);
}

function skip(msg) {
  console.log(`skipped: ${msg}`);
  process.exit(77);
}

function parseArgs(argv) {
  const positional = [];
  let minCharts = 0;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    let value;
    if (a === "--min-charts") {
      if (i + 1 >= argv.length) usage("--min-charts needs a value");
      value = argv[++i];
    } else if (a.startsWith("--min-charts=")) {
      value = a.slice("--min-charts=".length);
    } else if (a === "-h" || a === "--help") {
      usage();
    } else if (a.startsWith("--")) {
      usage(`unknown option ${a}`);
    } else {
      positional.push(a);
      continue;
    }
    if (!/^\d+$/.test(value)) usage(`--min-charts wants a non-negative integer, not '${value}'`);
    minCharts = Number(value);
  }
  if (positional.length !== 2) usage();
  return { page: positional[0], screenshot: positional[1], minCharts };
}

// $KILN_CHROMIUM (a path, or "none" to mean absent), else the Debian paths.
function findChromium() {
  const env = process.env.KILN_CHROMIUM;
  const executable = (p) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (env !== undefined && env !== "") {
    if (env === "none") return { why: "KILN_CHROMIUM=none" };
    return executable(env) ? { path: env } : { why: `KILN_CHROMIUM=${env} is not an executable file` };
  }
  for (const p of ["/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (executable(p)) return { path: p };
  }
  return { why: "no chromium at /usr/bin/chromium or /usr/bin/chromium-browser (set KILN_CHROMIUM)" };
}

// Runs in the page before its own scripts: notes performance.now() (ms since
// navigation start) when data-charts-drawn appears on <body>.
function markChartsDrawn() {
  const mark = () => {
    if (window.__kilnChartsDrawnAt === undefined && document.body &&
        document.body.dataset.chartsDrawn !== undefined) {
      window.__kilnChartsDrawnAt = performance.now();
    }
  };
  new MutationObserver(mark).observe(document, {
    subtree: true, attributes: true, attributeFilter: ["data-charts-drawn"],
  });
  document.addEventListener("DOMContentLoaded", mark);  // set in the HTML itself
}

// Runs in the page: every <canvas>'s size and whether any pixel has alpha > 0.
function inspectCanvases() {
  return Array.from(document.querySelectorAll("canvas"), (c, index) => {
    const rect = c.getBoundingClientRect();
    const info = {
      index, id: c.id || "", width: c.width, height: c.height,
      shownWidth: Math.round(rect.width), shownHeight: Math.round(rect.height),
      painted: false, error: "",
    };
    if (c.width === 0 || c.height === 0) return info;
    try {
      // A canvas with a WebGL context has no 2d one: copy it onto a 2d canvas.
      let ctx = c.getContext("2d");
      if (!ctx) {
        const copy = document.createElement("canvas");
        copy.width = c.width;
        copy.height = c.height;
        ctx = copy.getContext("2d");
        ctx.drawImage(c, 0, 0);
      }
      const data = ctx.getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < data.length; i += 4) {
        if (data[i] > 0) { info.painted = true; break; }
      }
    } catch (e) {
      info.error = String(e && e.message || e);
    }
    return info;
  });
}

// A canvas with pixels to read (not zero-sized, not unreadable) but none painted.
const isBlank = (c) => c.width > 0 && c.height > 0 && !c.error && !c.painted;

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pagePath = path.resolve(args.page);
  if (!fs.existsSync(pagePath) || !fs.statSync(pagePath).isFile()) usage(`no such page: ${args.page}`);
  const pageUrl = pathToFileURL(pagePath).href;

  const chromium = findChromium();
  if (!chromium.path) skip(`chromium not found: ${chromium.why}`);

  let playwright;
  try {
    playwright = await import("playwright-core");
  } catch (e) {
    skip(`playwright-core cannot be imported (${e.code || e.message}); run scripts/setup.sh (npm ci in tests/browser)`);
  }

  const failures = [];
  const fail = (msg) => failures.push(msg);
  const consoleErrors = [];  // {url, text, message}: console errors and uncaught exceptions
  const leftRequests = new Map();  // url -> resource type
  let browser;

  // Never hang: after 90 s, report and exit 1 at once (playwright-core kills
  // the browser it launched, and removes its profile, when node exits).
  const overall = setTimeout(() => {
    console.log(`${PREFIX} FAIL: ${args.page}: gave up after ${OVERALL_TIMEOUT_MS / 1000} s`);
    process.exit(1);
  }, OVERALL_TIMEOUT_MS);

  let drawnMs = NaN;
  let expected = NaN;
  let drawn = NaN;
  let canvases = [];
  try {
    browser = await playwright.chromium.launch({
      executablePath: chromium.path,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
      timeout: 30_000,
    });
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      serviceWorkers: "block",
    });

    // Only the page's own file (and data: URLs) may load; anything else is a
    // failure, and is aborted so that nothing leaves the machine.
    const allowed = (url) => url === pageUrl || url.startsWith("data:");
    context.on("request", (req) => {
      if (!allowed(req.url())) leftRequests.set(req.url(), req.resourceType());
    });
    await context.route("**/*", async (route) => {
      if (allowed(route.request().url())) {
        await route.continue().catch(() => {});
      } else {
        await route.abort("blockedbyclient").catch(() => {});
      }
    });
    await context.routeWebSocket(/.*/, (ws) => {
      leftRequests.set(ws.url(), "websocket");
      ws.close().catch(() => {});
    });

    const page = await context.newPage();
    page.on("console", (msg) => {
      const loc = msg.location();
      const where = loc?.url ? ` (${loc.url}:${loc.lineNumber + 1})` : "";
      if (msg.type() === "error") {
        consoleErrors.push({ url: loc?.url, text: msg.text(), message: `console error: ${msg.text()}${where}` });
      }
      else if (msg.type() === "warning") console.log(`${PREFIX} warning: console: ${msg.text()}${where}`);
    });
    page.on("pageerror", (err) => {
      consoleErrors.push({ text: err.message, message: `uncaught exception: ${err.message}` });
    });
    page.on("crash", () => fail("the page crashed"));
    await page.addInitScript(markChartsDrawn);

    const navStart = Date.now();
    let loaded = false;
    try {
      await page.goto(pageUrl, { waitUntil: "load", timeout: 30_000 });
      loaded = true;
    } catch (e) {
      fail(`the page did not load: ${e.message.split("\n")[0]}`);
    }

    if (loaded) {
      try {
        await page.waitForFunction(
          () => document.body && document.body.dataset.chartsDrawn !== undefined,
          null, { timeout: DRAWN_TIMEOUT_MS, polling: 50 });
        const wallMs = Date.now() - navStart;
        const at = await page.evaluate(() => window.__kilnChartsDrawnAt);
        drawnMs = typeof at === "number" ? at : wallMs;
      } catch (e) {
        fail(`data-charts-drawn was not set on <body> within ${DRAWN_TIMEOUT_MS / 1000} s of the load event`);
      }

      const ds = await page.evaluate(() => ({
        expected: document.body?.dataset.chartsExpected,
        drawn: document.body?.dataset.chartsDrawn,
      }));
      const asCount = (v) => (v !== undefined && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN);
      expected = asCount(ds.expected);
      drawn = asCount(ds.drawn);
      if (ds.expected === undefined) fail("<body> has no data-charts-expected");
      else if (Number.isNaN(expected)) fail(`data-charts-expected is not a count: '${ds.expected}'`);
      if (ds.drawn !== undefined && Number.isNaN(drawn)) fail(`data-charts-drawn is not a count: '${ds.drawn}'`);
      if (!Number.isNaN(expected) && !Number.isNaN(drawn) && drawn !== expected) {
        fail(`${drawn} of ${expected} charts drawn`);
      }
      if (!Number.isNaN(expected) && expected < args.minCharts) {
        fail(`the page expects ${expected} charts, fewer than --min-charts ${args.minCharts}`);
      }

      canvases = await page.evaluate(inspectCanvases);
      const name = (c) => `canvas #${c.index}${c.id ? ` (id ${c.id})` : ""}`;
      for (const c of canvases) {
        if (c.width === 0 || c.height === 0 || c.shownWidth === 0 || c.shownHeight === 0) {
          fail(`${name(c)} has a zero size: ${c.width}x${c.height} pixels, shown ${c.shownWidth}x${c.shownHeight}`);
        } else if (c.error) {
          fail(`${name(c)} could not be read: ${c.error}`);
        }
      }
      const blank = canvases.filter(isBlank);
      if (blank.length > 0) {
        fail(`${blank.length} of ${canvases.length} canvases blank: ${blank.map(name).join(", ")}`);
      }

      fs.mkdirSync(path.dirname(path.resolve(args.screenshot)), { recursive: true });
      await page.screenshot({ path: args.screenshot, fullPage: true, timeout: 30_000 });
    }
  } catch (e) {
    fail(`${e.message.split("\n")[0]}`);
  } finally {
    clearTimeout(overall);
    if (browser) await browser.close().catch(() => {});
  }

  // A blocked request also logs "Failed to load resource" as a console error:
  // it is reported once, as the request.
  const errors = consoleErrors.filter((e) => !(e.url && leftRequests.has(e.url) &&
                                               e.text.startsWith("Failed to load resource")));
  const problems = [
    ...Array.from(leftRequests, ([url, type]) => `request left the page: ${url} (${type})`),
    ...errors.map((e) => e.message),
    ...failures,
  ];
  if (problems.length > 0) {
    for (const msg of problems) console.log(`${PREFIX} FAIL: ${args.page}: ${msg}`);
    process.exit(1);
  }
  const blankCount = canvases.filter(isBlank).length;
  console.log(`${PREFIX} ${args.page}: ${drawn} of ${expected} charts drawn in ${Math.round(drawnMs)} ms, ` +
    `${blankCount} blank canvases, ${errors.length} console errors, ` +
    `${leftRequests.size} requests left the page; screenshot ${args.screenshot}`);
  process.exit(0);
}

await main();
