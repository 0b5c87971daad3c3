// Drives the review page in headless Debian Chromium for tests/it/review.rs: opens it with a
// tenant's key, reads a refused act's reasons, an effect's divergence and the guard's audited count, clicks an audit
// button on one finding, waits for the count on the page to change, and renders a cleared
// reply's basis and claims with the page's own code. Prints one JSON line;
// exits 1 with the reason on stderr when any step fails.
//
// node review.mjs URL FINDING_ID LABEL
import { chromium } from "playwright-core";

const [url, finding, label] = process.argv.slice(2);
if (!url || !finding || !label) {
  console.error("usage: node review.mjs URL FINDING_ID LABEL");
  process.exit(2);
}
const executablePath = process.env.WARRANT_CHROMIUM || "/usr/bin/chromium";
const guard = '.subject[data-subject="guard:announcement"]';
const deadline = { timeout: 60000 };

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  await page.goto(url, deadline);
  await page.waitForSelector('body[data-loaded="true"]', deadline);
  const refused = await page.locator('.act[data-verdict="refuse"] .reason').allTextContents();
  const divergences = await page.locator('.effect[data-outcome="done"] .divergence').allTextContents();
  const before = Number(await page.locator(guard).getAttribute("data-audited", deadline));
  const row = `.finding[data-finding="${finding}"]`;
  await page.click(`${row} button[data-label="${label}"]`, deadline);
  // The page reloads the ladder after the audit; wait for the count it shows to change.
  await page.waitForFunction(
    ([selector, count]) => {
      const node = document.querySelector(selector);
      return node !== null && Number(node.dataset.audited) !== count;
    },
    [guard, before],
    deadline,
  );
  const after = Number(await page.locator(guard).getAttribute("data-audited", deadline));
  const audited = await page.locator(`${row} .label`).textContent(deadline);
  const note = await page.locator("#audit-status").textContent(deadline);
  // The bases of the cleared replies the page shows: the announcing turn's draft went through
  // the outbound gate and came back as the live path's fallback copy.
  const bases = await page.locator(".reply").evaluateAll((nodes) => nodes.map((n) => n.dataset.basis || ""));
  const fallbackText = await page.locator('.reply[data-basis="fallback"] .evidence').allTextContents();
  // A rewritten reply with claims, which no turn of this test has, through the page's renderer.
  const reply = await page.evaluate(() => renderReply({
    reply: { text: "Your order is cancelled.", basis: "rewritten", claims: [{ kind: "order_cancelled", args: { order: "#W1" } }], reasons: ["claim_unbacked"] },
  }).textContent);
  const none = await page.evaluate(() => renderReply({ reply: null }).textContent);
  console.log(JSON.stringify({ refused, divergences, before, after, audited, note, problems, bases, fallbackText, reply, none }));
} catch (e) {
  console.error("review.mjs: " + (e && e.message ? e.message : e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
