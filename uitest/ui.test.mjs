// Browser test of the operator's flow in the Temporal UI: start `delegate dev`
// and the claims agent on free loopback ports, start the sample delegation,
// wait until it asks for input, answer it through the UI's own "Send a
// Signal" form (signal provide-input) in headless Chromium, and check that
// the delegation completes with a validated output. Screenshots go to
// ../test-results/. Needs Debian's chromium (/usr/bin/chromium or
// $CHROMIUM) and playwright-core; no browser download.
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => join(root, 'bin', name);
const results = join(root, 'test-results');
mkdirSync(results, { recursive: true });

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    s.on('error', reject);
  });
}

async function waitFor(what, ms, cond) {
  const end = Date.now() + ms;
  let last = '';
  while (Date.now() < end) {
    try { const [ok, info] = await cond(); if (ok) return; last = info; } catch (e) { last = String(e); }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

const procs = [];
function start(cmd, args) {
  const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  p.stdout.on('data', (d) => { log += d; });
  p.stderr.on('data', (d) => { log += d; });
  procs.push(p);
  p.log = () => log;
  return p;
}
function stopAll() { for (const p of procs) { try { p.kill('SIGINT'); } catch {} } }
process.on('exit', stopAll);

const [port, uiPort, agentPort] = [await freePort(), await freePort(), await freePort()];
const address = `127.0.0.1:${port}`;
const dev = start(bin('delegate'), ['dev', '--memory', '--port', String(port), '--ui-port', String(uiPort), '--poll-initial', '100ms']);
const agent = start(bin('claims-agent'), ['--addr', `127.0.0.1:${agentPort}`, '--work-delay', '100ms']);
const cli = (...args) => execFileSync(bin('delegate'), [...args, '--address', address], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

let browser;
let page;
try {
  await waitFor('the server', 120000, async () => [cli('list').includes('ID'), 'not yet']);
  const id = `ui-${Date.now()}`;
  const contract = JSON.parse(readFileSync(join(root, 'contracts/examples/lost-parcel.json'), 'utf8'));
  contract.local_workflow_id = id;
  contract.agent_card_url = `http://127.0.0.1:${agentPort}/.well-known/agent-card.json`;
  contract.deadline = new Date(Date.now() + 3600e3).toISOString().replace(/\.\d+Z$/, 'Z');
  const file = join(mkdtempSync(join(tmpdir(), 'uitest-')), 'contract.json');
  writeFileSync(file, JSON.stringify(contract));
  cli('start', '--contract', file);
  await waitFor('input-required', 60000, async () => {
    const s = JSON.parse(cli('status', id, '--json'));
    return [s.a2a_state === 'input-required', s.a2a_state];
  });

  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(`http://127.0.0.1:${uiPort}/namespaces/default/workflows/${id}`, { waitUntil: 'domcontentloaded' });
  // The page says what the delegation is: its static summary (purpose,
  // skill, agent) and details, set at start, under User Metadata.
  // The UI renders user metadata markdown in sandboxed frames.
  await page.getByText('User Metadata').first().click({ timeout: 60000 });
  const framesText = async () => (await Promise.all(page.frames().map((f) => f.locator('body').innerText().catch(() => '')))).join('\n');
  const summary = `open a claim for a lost parcel · open-claim at 127.0.0.1:${agentPort}`;
  await waitFor('the static summary and details', 30000, async () => {
    const text = await framesText();
    return [text.includes(summary) && text.includes('Allowed outputs: claim_opened'), text.slice(0, 500)];
  });
  await page.getByRole('button', { name: 'More Actions' }).click({ timeout: 60000 });
  await page.screenshot({ path: join(results, 'ui-1-waiting.png') });
  await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.locator('[data-menu-anchor="signal-select-select"] button').first().click();
  // The UI lists the workflow's signals with their descriptions.
  await page.getByRole('option', { name: 'provide-input' }).first().waitFor({ timeout: 30000 });
  const options = await page.getByRole('option').allInnerTexts();
  assert.ok(options.some((o) => o.startsWith('provide-input') && o.includes('Answer the remote agent')), `signals listed: ${options}`);
  await page.getByRole('option', { name: 'provide-input' }).first().click();
  await dialog.locator('.cm-content').first().click();
  await page.keyboard.type('{"text": "photo attached: box.jpg", "answered_by": "browser-test"}');
  await page.screenshot({ path: join(results, 'ui-2-signal-form.png') });
  await dialog.getByRole('button', { name: 'Submit' }).click();

  await waitFor('the outcome', 60000, async () => {
    const s = JSON.parse(cli('status', id, '--json'));
    return [s.outcome && s.outcome.status === 'completed', s.a2a_state];
  });
  const s = JSON.parse(cli('status', id, '--json'));
  assert.equal(s.outcome.outputs.length, 1);
  assert.equal(s.outcome.outputs[0].kind, 'claim_opened');
  assert.equal(s.answers[0].via, 'signal');
  assert.equal(s.answers[0].answered_by, 'browser-test');
  await page.reload({ waitUntil: 'domcontentloaded' });
  await page.getByText('COMPLETED').first().waitFor({ timeout: 30000 });
  await page.screenshot({ path: join(results, 'ui-3-completed.png') });
  console.log(`ok - answered ${id} through the Temporal UI's Send a Signal form; the delegation completed`);
  console.log('1 passed, 0 failed');
} catch (e) {
  console.error('FAIL:', e.message);
  if (page) {
    await page.screenshot({ path: join(results, 'ui-failure.png') }).catch(() => {});
    console.error('--- page text (head) ---\n' + (await page.locator('body').innerText().catch(() => '')).slice(0, 3000));
  }
  console.error('--- delegate dev log (tail) ---\n' + dev.log().slice(-3000));
  console.error('--- claims agent log (tail) ---\n' + agent.log().slice(-1000));
  console.log('0 passed, 1 failed');
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
  stopAll();
}
