// The console's journeys in a real browser (issue #19): Debian's Chromium
// driven by playwright-core, against a real `treasury serve` that
// cmd/treasury's TestConsole starts. Every page is watched for console
// errors, page errors, failed requests and error answers (but the ones a
// journey causes on purpose), and saved as a screenshot in SCREENSHOTS.
//
// Environment: TREASURY_URL (the server's root), TREASURY_OPERATOR_KEY,
// CHROMIUM (the browser's path), SCREENSHOTS (a folder).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { chromium } from 'playwright-core';

const BASE = process.env.TREASURY_URL;
const OPERATOR = process.env.TREASURY_OPERATOR_KEY;
const SHOTS = process.env.SCREENSHOTS;
assert.ok(BASE && OPERATOR && SHOTS, 'TREASURY_URL, TREASURY_OPERATOR_KEY and SCREENSHOTS are needed');
mkdirSync(SHOTS, { recursive: true });

// api calls the REST API with a key.
async function api(key, method, path, body) {
  const res = await fetch(`${BASE}/v1${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'Idempotency-Key': randomUUID() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function poll(what, fn, timeoutMs = 15000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// platform registers and approves a platform with a funded, KYB-approved
// account: its key and account.
// With review, its KYB goes to the review queue (EIN ending 1111) and the
// account is not funded.
async function platform(name, { review = false } = {}) {
  const ein = review ? '45-6781111' : '12-3456789';
  const p = await api(OPERATOR, 'POST', '/platforms', { name, contact_email: `ops@${name.toLowerCase().replace(/\W/g, '')}.example.com` });
  const approved = await api(OPERATOR, 'POST', `/operator/platforms/${p.id}/approve`, {});
  const key = approved.sandbox_api_key.secret;
  const va = await api(key, 'POST', '/virtual-accounts', { platform_id: p.id, entity_ref: `${name.split(' ')[0].toLowerCase()}_business`, type: 'checking' });
  const kyb = await api(key, 'POST', '/kyb', {
    virtual_account_id: va.id,
    business: { legal_name: `${name} LLC`, ein, entity_type: 'llc', formation_date: '2015-06-01', formation_state: 'DE',
      address: { line1: '500 Congress Ave', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' } },
    beneficial_owners: [{ first_name: 'Jane', last_name: 'Doe', date_of_birth: '1980-04-12', ssn_last4: '9876', ownership_percentage: '60',
      is_control_person: true, address: { line1: '12 Elm St', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' } }],
  });
  const want = review ? 'pending_review' : 'approved';
  await poll(`KYB ${want}`, async () => (await api(key, 'GET', `/kyb/${kyb.id}`)).status === want);
  if (review) return { id: p.id, key, va };
  await api(key, 'POST', '/simulations/inbound-transfers', { virtual_account_id: va.id, amount: 500_000, rail: 'rtp',
    originator: { name: 'Globex Corp', account_number: '987654321', routing_number: '021000021' } });
  await poll('the account funded', async () => (await api(key, 'GET', `/virtual-accounts/${va.id}`)).balance.available === 500_000);
  return { id: p.id, key, va };
}

function pay(key, va, body) {
  return api(key, 'POST', '/payments', { virtual_account_id: va, ...body });
}

// A date two days ahead, New York's calendar: a scheduled payment's.
function inTwoDays() {
  const d = new Date(Date.now() + 2 * 86400_000);
  return d.toLocaleDateString('en-CA', { timeZone: 'America/New_York' });
}

let browser;
let acme;
let globex;
const DEST = { account_number: '123456789', routing_number: '021000021', name: 'Initech LLC' };

before(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  acme = await platform('Acme Payroll');
  globex = await platform('Globex Invoicing');
});

after(async () => {
  await browser?.close();
});

// session opens a browser context (its own cookies) watched for problems;
// expected lists the error answers the journey causes on purpose
// ("401 /console/sign-in").
async function session(t, { viewport = { width: 1280, height: 800 } } = {}) {
  const context = await browser.newContext({ viewport, baseURL: BASE });
  const page = await context.newPage();
  const problems = [];
  const expected = [];
  page.on('console', (m) => {
    // Chromium logs every error answer as "Failed to load resource": the
    // response listener below judges those, expected or not.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource: the server responded with a status of')) {
      problems.push(`console error: ${m.text()}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // A refresh in flight when the journey leaves the page is cut off by
    // the browser, as it would be for anyone: not a failure of the page.
    if (r.headers()['hx-request'] === 'true' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (r.status() < 400) return;
    const what = `${r.status()} ${new URL(r.url()).pathname}`;
    const i = expected.indexOf(what);
    if (i >= 0) expected.splice(i, 1);
    else problems.push(`error answer: ${what}`);
  });
  t.after(async () => {
    await context.close();
    assert.deepEqual(problems, [], 'no console errors, page errors, failed requests or unexpected error answers');
  });
  return { context, page, expect: (what) => expected.push(what) };
}

async function signIn(page, key) {
  await page.goto('/console/sign-in');
  await page.getByLabel('API key').fill(key);
  // Whatever the answer, the page it leads to has loaded before the
  // journey goes on (a goto meanwhile would abort its redirects).
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.getByRole('button', { name: 'Sign in' }).click()]);
}

// axe-core's rules (WCAG 2 A and AA: labels, names, contrast, landmarks,
// …) are run on every page a journey saves: a violation fails it. The
// script is evaluated through the debugging protocol, which the pages'
// Content-Security-Policy (rightly) does not let a <script> tag do.
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function accessible(page, name) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }));
  const found = result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join('; ')})`);
  assert.deepEqual(found, [], `${name}: accessibility violations`);
}

// shot checks a page's accessibility and saves its screenshot.
async function shot(page, name) {
  await accessible(page, name);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

test('sign-in refuses a wrong key, takes a platform key, and signs out', async (t) => {
  const { page, expect } = await session(t);
  await page.goto('/console/accounts');
  assert.equal(new URL(page.url()).pathname, '/console/sign-in', 'signed out, a page sends the browser to sign in');
  await shot(page, 'sign-in');

  expect('401 /console/sign-in');
  await signIn(page, 'sk_sandbox_' + 'x'.repeat(40));
  await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();

  // By keyboard only: the field, the key, Enter.
  await page.getByLabel('API key').focus();
  await page.keyboard.type(acme.key);
  await Promise.all([page.waitForURL('**/console/accounts', { waitUntil: 'load' }), page.keyboard.press('Enter')]);
  assert.equal(await page.getByTestId('environment').textContent(), 'sandbox');
  assert.ok(await page.getByRole('link', { name: 'acme_business' }).isVisible());
  assert.equal(await page.locator('body').textContent().then((s) => s.includes(acme.key)), false, 'the key is nowhere on the page');
  const cookies = await page.context().cookies();
  const cookie = cookies.find((c) => c.name === 'treasury_console');
  assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Strict', `the session cookie: ${JSON.stringify(cookie)}`);
  assert.ok(!cookies.some((c) => c.value.includes(acme.key)), 'no cookie holds the key');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL('**/console/sign-in');
  await page.goto('/console/accounts');
  assert.equal(new URL(page.url()).pathname, '/console/sign-in', 'after sign-out the pages are closed');
});

test('accounts: search, an account page with its balance and transactions, freeze and unfreeze', async (t) => {
  const { page } = await session(t);
  await signIn(page, acme.key);
  await page.waitForURL('**/console/accounts');
  await shot(page, 'accounts');
  await page.getByLabel('Business (entity ref)').fill('nobody');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No accounts match.').waitFor();
  await page.getByLabel('Business (entity ref)').fill('acme_business');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('link', { name: 'acme_business' }).click();
  await page.waitForURL(`**/console/accounts/${acme.va.id}`);
  assert.equal(await page.getByTestId('available').textContent(), '$5,000.00');
  assert.ok(await page.getByRole('cell', { name: /Inbound transfer/i }).first().isVisible(), 'the funding transfer is listed');
  await shot(page, 'account');

  await page.getByRole('button', { name: 'Freeze account' }).click();
  await page.getByRole('status').filter({ hasText: 'Account frozen.' }).waitFor();
  assert.equal(await page.getByTestId('account-status').textContent(), 'frozen');
  assert.equal((await api(acme.key, 'GET', `/virtual-accounts/${acme.va.id}`)).status, 'frozen', 'the API sees it frozen');
  await page.getByRole('button', { name: 'Unfreeze account' }).click();
  await page.getByRole('status').filter({ hasText: 'Account unfrozen.' }).waitFor();
  assert.equal(await page.getByTestId('account-status').textContent(), 'active');
});

test('payments: the list updates by itself, a failure explained, a timeline, a cancel', async (t) => {
  const { page } = await session(t);
  await signIn(page, acme.key);
  await page.goto('/console/payments');
  // Made through the API while the page is open: it appears without a reload.
  const failed = await pay(acme.key, acme.va.id, { amount: 3_000, rail: 'rtp', destination: { ...DEST, account_number: '4000000003', name: 'Closed Account Co' } });
  await page.getByRole('cell', { name: 'Closed Account Co' }).waitFor({ timeout: 10000 });
  const done = await pay(acme.key, acme.va.id, { amount: 2_500, rail: 'rtp', destination: DEST });
  const scheduled = await pay(acme.key, acme.va.id, { amount: 1_200, rail: 'ach_standard', destination: { ...DEST, name: 'Later LLC' }, scheduled_for: inTwoDays() });
  await poll('the RTP payments settled', async () =>
    (await api(acme.key, 'GET', `/payments/${failed.id}`)).status === 'failed' && (await api(acme.key, 'GET', `/payments/${done.id}`)).status === 'completed');
  await page.getByRole('cell', { name: 'Later LLC' }).waitFor({ timeout: 10000 });
  await shot(page, 'payments');

  await page.goto(`/console/payments/${failed.id}`);
  assert.equal(await page.getByTestId('payment-status').textContent(), 'failed');
  const failure = await page.getByTestId('failure').textContent();
  assert.match(failure, /AC03/);
  assert.match(failure, /What to do:/);
  const timeline = await page.getByTestId('timeline').textContent();
  assert.match(timeline, /payment\.created[\s\S]*payment\.failed/);
  assert.equal(await page.getByRole('button', { name: 'Cancel payment' }).count(), 0, 'a failed payment has no cancel');
  await shot(page, 'payment-failed');

  await page.goto(`/console/payments/${scheduled.id}`);
  assert.equal(await page.getByTestId('payment-status').textContent(), 'scheduled');
  await page.getByRole('button', { name: 'Cancel payment' }).click();
  await page.getByRole('status').filter({ hasText: 'Payment canceled.' }).waitFor();
  assert.equal(await page.getByTestId('payment-status').textContent(), 'canceled');
  assert.match(await page.getByTestId('timeline').textContent(), /payment\.canceled/);
  assert.equal((await api(acme.key, 'GET', `/payments/${scheduled.id}`)).status, 'canceled');
  await shot(page, 'payment-canceled');
});

test('a form without the session token is refused, and changes nothing', async (t) => {
  const { page, expect } = await session(t);
  await signIn(page, acme.key);
  await page.waitForURL('**/console/accounts');
  // Posted with the session's cookie but without its token, as a page of
  // another site (or a script that read no form) would.
  const forged = await page.request.post(`/console/accounts/${acme.va.id}/freeze`, { form: { csrf: 'forged' }, maxRedirects: 0 });
  assert.equal(forged.status(), 403);
  const cross = await page.request.post(`/console/accounts/${acme.va.id}/freeze`, { maxRedirects: 0,
    headers: { Origin: 'http://attacker.example.com' }, form: {} });
  assert.equal(cross.status(), 403);
  // A form of another origin, submitted by the browser: SameSite=Strict
  // keeps the session cookie home, so it is not even signed in.
  const attacker = await page.context().newPage();
  await attacker.route('http://attacker.example.com/', (route) => route.fulfill({ contentType: 'text/html',
    body: `<form method="post" action="${BASE}/console/accounts/${acme.va.id}/freeze"><input name="csrf" value="x"></form>` }));
  await attacker.goto('http://attacker.example.com/');
  await Promise.all([attacker.waitForNavigation(), attacker.locator('form').evaluate((f) => f.submit())]);
  assert.equal(new URL(attacker.url()).pathname, '/console/sign-in', 'the cross-site post landed signed out');
  await attacker.close();
  assert.equal((await api(acme.key, 'GET', `/virtual-accounts/${acme.va.id}`)).status, 'active', 'the account was not frozen');
});

test("one platform's session never shows another's objects", async (t) => {
  const { page, expect } = await session(t);
  await signIn(page, globex.key);
  await page.waitForURL('**/console/accounts');
  assert.equal(await page.getByRole('link', { name: 'acme_business' }).count(), 0);
  expect(`404 /console/accounts/${acme.va.id}`);
  await page.goto(`/console/accounts/${acme.va.id}`);
  await page.getByRole('alert').waitFor();
  const body = await page.locator('main').textContent();
  assert.ok(!body.includes(acme.va.account_number) && !body.includes('acme_business'), 'nothing of Acme on the page');
  await page.goto('/console/payments');
  assert.equal(await page.getByRole('cell', { name: 'Closed Account Co' }).count(), 0, "Acme's payments are not listed");
});

test('the operator approves a platform and sees its key once', async (t) => {
  const { page, expect } = await session(t);
  const pending = await api(OPERATOR, 'POST', '/platforms', { name: 'Hooli Benefits', contact_email: 'ops@hooli.example.com' });
  await signIn(page, OPERATOR);
  await page.waitForURL('**/console/platforms');
  expect('403 /console/accounts');
  await page.goto('/console/accounts');
  await page.getByRole('alert').waitFor();
  await page.goto('/console/platforms');
  await page.getByRole('button', { name: 'Approve Hooli Benefits' }).click();
  const secret = await page.getByTestId('secret').textContent();
  assert.match(secret, /^sk_sandbox_[0-9A-Za-z]{40}$/);
  assert.equal((await api(secret, 'GET', '/platform')).id, pending.id, 'the key shown is the new platform\'s');
  await shot(page, 'platforms');
  await page.goto('/console/platforms');
  assert.equal(await page.getByTestId('secret').count(), 0, 'shown once');
  assert.equal(await page.getByRole('button', { name: 'Approve Hooli Benefits' }).count(), 0);
});

test('the pages fit a phone screen', async (t) => {
  const { page } = await session(t, { viewport: { width: 390, height: 844 } });
  await signIn(page, acme.key);
  await page.waitForURL('**/console/accounts');
  for (const path of ['/console/accounts', `/console/accounts/${acme.va.id}`, '/console/payments', '/console/ledger',
    '/console/kyb', '/console/webhooks', '/console/events', '/console/keys']) {
    await page.goto(path);
    const overflow = await page.evaluate(() => document.body.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${path} scrolls sideways by ${overflow}px on a phone`);
  }
  await page.goto(`/console/accounts/${acme.va.id}`);
  await shot(page, 'account-phone');
});

test('API keys: a new secret shown once, a roll, a revoke; revoking its own key signs the session out', async (t) => {
  const { page, expect } = await session(t);
  // A key of its own, so that revoking it spares the other journeys' key.
  const own = await api(acme.key, 'POST', '/platform/api-keys', { name: 'Console journey' });
  await signIn(page, own.secret);
  await page.goto('/console/keys');
  await page.getByLabel('Name').fill('Payroll sync');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = await page.getByTestId('secret').textContent();
  assert.match(secret, /^sk_sandbox_[0-9A-Za-z]{40}$/);
  assert.equal((await api(secret, 'GET', '/platform')).id, acme.id, 'the new key works');
  await shot(page, 'keys');
  await page.goto('/console/keys');
  assert.equal(await page.getByTestId('secret').count(), 0, 'the secret is shown once');

  await page.getByRole('button', { name: 'Roll Payroll sync' }).click();
  const rolled = await page.getByTestId('secret').textContent();
  assert.notEqual(rolled, secret);
  assert.equal((await api(rolled, 'GET', '/platform')).id, acme.id, 'the rolled key works');
  assert.equal((await api(secret, 'GET', '/platform')).id, acme.id, 'and the old one for its grace');

  await page.getByRole('button', { name: 'Revoke Payroll sync' }).first().click();
  await page.getByRole('status').filter({ hasText: 'Key revoked.' }).waitFor();
  const refused = await fetch(`${BASE}/v1/platform`, { headers: { Authorization: `Bearer ${rolled}` } });
  assert.equal(refused.status, 401, 'the revoked key is refused');

  await page.getByRole('button', { name: 'Revoke Console journey' }).click();
  await page.waitForURL('**/console/sign-in');
});

test('webhooks: an endpoint, its deliveries with every attempt and its answer, a retry, a test, a rotated secret', async (t) => {
  const { page } = await session(t);
  // A receiver that refuses until told to take.
  let take = false;
  const received = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      received.push(body);
      if (take) res.writeHead(200).end('ok');
      else res.writeHead(500, { 'Content-Type': 'text/plain' }).end('receiver says no');
    });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => receiver.close(r)));
  const url = `http://127.0.0.1:${receiver.address().port}/hooks`;
  const endpoint = await api(acme.key, 'POST', '/webhooks', { url, events: ['payment.completed'], retry_policy: { max_attempts: 1 } });

  await signIn(page, acme.key);
  await page.goto('/console/webhooks');
  await page.getByRole('link', { name: url }).click();
  await pay(acme.key, acme.va.id, { amount: 100, rail: 'rtp', destination: DEST });
  // The failed delivery appears by itself, with its attempt and the answer.
  const failed = page.getByTestId('delivery').filter({ hasText: 'failed' }).first();
  await failed.waitFor({ timeout: 15000 });
  assert.match(await failed.textContent(), /HTTP 500[\s\S]*receiver says no/);
  await page.getByTestId('health').filter({ hasText: 'failing' }).waitFor({ timeout: 10000 });
  await shot(page, 'webhook');

  take = true;
  await failed.getByRole('button', { name: 'Retry delivery' }).click();
  await page.getByRole('status').filter({ hasText: 'Delivery queued again.' }).waitFor();
  await poll('the retried delivery', async () => (await api(acme.key, 'GET', `/webhooks/${endpoint.id}/deliveries?status=succeeded`)).data.length === 1);
  await page.getByTestId('health').filter({ hasText: 'healthy' }).waitFor({ timeout: 10000 });

  await page.getByRole('button', { name: 'Send a test event' }).click();
  await page.getByRole('status').filter({ hasText: 'test event' }).waitFor();
  await poll('the test event received', async () => received.some((b) => b.includes('"webhook.test"') || b.includes('test')));

  await page.getByRole('button', { name: 'Rotate secret' }).click();
  assert.match(await page.getByTestId('secret').textContent(), /^whsec_/);
});

test("events and KYB: the log's public events filtered; a review decided in the sandbox", async (t) => {
  const { page } = await session(t);
  const va = await api(acme.key, 'POST', '/virtual-accounts', { platform_id: acme.id, entity_ref: 'review_business', type: 'checking' });
  await api(acme.key, 'POST', '/kyb', {
    virtual_account_id: va.id,
    business: { legal_name: 'Review Co LLC', ein: '98-7651111', entity_type: 'llc', formation_date: '2015-06-01', formation_state: 'DE',
      address: { line1: '500 Congress Ave', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' } },
    beneficial_owners: [{ first_name: 'Ann', last_name: 'Lee', date_of_birth: '1980-04-12', ssn_last4: '1234', ownership_percentage: '100',
      is_control_person: true, address: { line1: '12 Elm St', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' } }],
  });
  await signIn(page, acme.key);
  await page.goto('/console/events?type=payment.failed');
  assert.ok(await page.getByRole('cell', { name: 'payment.failed' }).first().isVisible());
  assert.equal(await page.getByRole('cell', { name: 'payment.completed' }).count(), 0, 'the filter holds');
  await shot(page, 'events');

  await poll('the verification in review', async () => (await api(acme.key, 'GET', `/kyb?virtual_account_id=${va.id}`)).data[0]?.status === 'pending_review');
  await page.goto('/console/kyb');
  await shot(page, 'kyb');
  await page.getByRole('button', { name: 'Approve Review Co LLC (simulated)' }).click();
  await page.getByRole('status').filter({ hasText: 'Verification approved.' }).waitFor();
  assert.equal((await api(acme.key, 'GET', `/virtual-accounts/${va.id}`)).kyb_status, 'approved');
});

test('sandbox simulations and approvals: fund an account, complete and fail a payment, a second key approves', async (t) => {
  const { page, expect } = await session(t);
  await signIn(page, acme.key);
  await page.goto(`/console/accounts/${acme.va.id}`);
  const before = (await api(acme.key, 'GET', `/virtual-accounts/${acme.va.id}`)).balance.available;
  await page.getByLabel('Amount ($)').fill('1,250.50');
  await page.getByRole('button', { name: 'Simulate an inbound transfer' }).click();
  await page.getByRole('status').filter({ hasText: '$1,250.50' }).waitFor();
  assert.equal((await api(acme.key, 'GET', `/virtual-accounts/${acme.va.id}`)).balance.available, before + 125_050);

  // With auto-settle off, payments wait for the simulations.
  await api(acme.key, 'PATCH', '/platform/settings', { sandbox: { auto_settle: false }, payment_approval_threshold: 100_000 });
  t.after(() => api(acme.key, 'PATCH', '/platform/settings', { sandbox: { auto_settle: true }, payment_approval_threshold: null }));
  const toComplete = await pay(acme.key, acme.va.id, { amount: 700, rail: 'ach_same_day', destination: DEST });
  const toFail = await pay(acme.key, acme.va.id, { amount: 800, rail: 'ach_same_day', destination: DEST });
  await page.goto(`/console/payments/${toComplete.id}`);
  await page.getByRole('button', { name: 'Complete (simulated)' }).click();
  await page.getByRole('status').filter({ hasText: 'Payment completed (simulated).' }).waitFor();
  assert.equal(await page.getByTestId('payment-status').textContent(), 'completed');
  await page.goto(`/console/payments/${toFail.id}`);
  await page.getByLabel('Code').selectOption('R01');
  await page.getByRole('button', { name: 'Fail (simulated)' }).click();
  await page.getByRole('status').filter({ hasText: 'R01' }).waitFor();
  assert.match(await page.getByTestId('failure').textContent(), /R01/);

  // At the threshold: the key that made it cannot approve; another can.
  const big = await pay(acme.key, acme.va.id, { amount: 150_000, rail: 'rtp', destination: DEST });
  assert.equal(big.status, 'requires_approval');
  await page.goto(`/console/payments/${big.id}`);
  expect(`403 /console/payments/${big.id}/approve`);
  await page.getByRole('button', { name: 'Approve payment' }).click();
  await page.getByRole('alert').waitFor();
  const second = await api(acme.key, 'POST', '/platform/api-keys', { name: 'Approver' });
  const approver = await session(t);
  await signIn(approver.page, second.secret);
  await approver.page.goto(`/console/payments/${big.id}`);
  await approver.page.getByRole('button', { name: 'Approve payment' }).click();
  await approver.page.getByRole('status').filter({ hasText: 'Payment approved.' }).waitFor();
  assert.notEqual((await api(acme.key, 'GET', `/payments/${big.id}`)).status, 'requires_approval');
  const denied = await pay(acme.key, acme.va.id, { amount: 120_000, rail: 'rtp', destination: DEST });
  await approver.page.goto(`/console/payments/${denied.id}`);
  await approver.page.getByLabel('Reason').fill('Not in this month\'s budget');
  await approver.page.getByRole('button', { name: 'Deny payment' }).click();
  await approver.page.getByRole('status').filter({ hasText: 'Payment denied.' }).waitFor();
  assert.equal(await approver.page.getByTestId('payment-status').textContent(), 'denied');
});

test("the operator: a platform's configuration and live, the KYB review queue, the ACH files", async (t) => {
  const { page, expect } = await session(t);
  const p = await platform('Initrode Payroll', { review: true });
  await signIn(page, OPERATOR);
  await page.goto('/console/reviews');
  const review = page.getByTestId('review').filter({ hasText: 'Initrode Payroll LLC' });
  await review.waitFor();
  await shot(page, 'reviews');
  await review.getByLabel('Reason').fill('The formation documents do not match.');
  await review.getByRole('button', { name: 'Reject Initrode Payroll LLC' }).click();
  await page.getByRole('status').filter({ hasText: 'Verification rejected.' }).waitFor();
  assert.equal((await api(p.key, 'GET', `/virtual-accounts/${p.va.id}`)).kyb_status, 'rejected');

  await page.goto(`/console/platforms/${p.id}`);
  await page.getByLabel('rtp').fill('0.75');
  await page.getByLabel('Revenue share rate (0 to 1)').fill('0.35');
  await page.getByLabel('Requests per second').fill('40');
  await page.getByLabel('Burst').fill('80');
  await page.getByRole('button', { name: 'Save configuration' }).click();
  await page.getByRole('status').filter({ hasText: 'Configuration saved.' }).waitFor();
  const configured = await api(OPERATOR, 'GET', `/operator/platforms/${p.id}`);
  assert.equal(configured.fee_schedule.rtp, 75);
  assert.equal(Number(configured.revenue_share_rate), 0.35);
  assert.deepEqual(configured.rate_limit, { per_second: 40, burst: 80 });
  // A bad value is refused with the platform's rule, nothing saved.
  expect(`400 /console/platforms/${p.id}/fees`);
  await page.getByLabel('Burst').fill('0');
  await page.getByRole('button', { name: 'Save configuration' }).click();
  await page.getByRole('alert').filter({ hasText: 'burst' }).waitFor();
  assert.deepEqual((await api(OPERATOR, 'GET', `/operator/platforms/${p.id}`)).rate_limit, { per_second: 40, burst: 80 });
  await page.goto(`/console/platforms/${p.id}`);
  await page.getByRole('button', { name: 'Enable live' }).click();
  assert.match(await page.getByTestId('secret').textContent(), /^sk_live_[0-9A-Za-z]{40}$/);
  assert.equal(await page.getByTestId('live').textContent(), 'enabled');
  await shot(page, 'platform');


  // Live: the platform's live key opens a live session (its badge says
  // so); the live business's KYB waits in the queue for the operator; a
  // live ACH payment leaves in a file the operator sees.
  const liveKey = await page.getByTestId('secret').textContent();
  const liveVA = await api(liveKey, 'POST', '/virtual-accounts', { platform_id: p.id, entity_ref: 'initrode_live', type: 'checking' });
  const liveKYB = await api(liveKey, 'POST', '/kyb', {
    virtual_account_id: liveVA.id,
    business: { legal_name: 'Initrode Live LLC', ein: '45-6782222', entity_type: 'llc', formation_date: '2015-06-01', formation_state: 'DE',
      address: { line1: '500 Congress Ave', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' } },
    beneficial_owners: [{ first_name: 'Ann', last_name: 'Lee', date_of_birth: '1980-04-12', ssn_last4: '1234', ownership_percentage: '100',
      is_control_person: true, address: { line1: '12 Elm St', city: 'Austin', state: 'TX', postal_code: '78701', country: 'US' } }],
  });
  await poll('the live KYB in review', async () => (await api(liveKey, 'GET', `/kyb/${liveKYB.id}`)).status === 'pending_review');
  await page.goto('/console/reviews');
  await page.getByRole('button', { name: 'Approve Initrode Live LLC' }).click();
  await page.getByRole('status').filter({ hasText: 'Verification approved.' }).waitFor();
  await api(OPERATOR, 'POST', `/operator/platforms/${p.id}/fund`, { amount: 100_000 });
  await api(liveKey, 'POST', '/ledger/entries', { type: 'adjustment', description: 'Opening funds', virtual_account_id: liveVA.id,
    direction: 'credit', amount: 100_000 });
  await pay(liveKey, liveVA.id, { amount: 4_200, rail: 'ach_same_day', destination: DEST });
  await api(OPERATOR, 'POST', '/operator/rails/ach/files', {});
  await page.goto('/console/ach-files');
  const file = page.getByRole('row').filter({ hasText: '$42.00' });
  await file.waitFor();
  assert.match(await file.textContent(), /ach-\d{8}-\d{6}-A\.ach/);
  await shot(page, 'ach-files');

  const live = await session(t);
  await signIn(live.page, liveKey);
  await live.page.waitForURL('**/console/accounts');
  assert.equal(await live.page.getByTestId('environment').textContent(), 'live');
  assert.ok(await live.page.getByRole('link', { name: 'initrode_live' }).isVisible());
  assert.equal(await live.page.getByRole('link', { name: 'initrode_business' }).count(), 0, 'the sandbox account is not in live');
});

test("the ledger: accounts and entries, a journal entry checked in the browser and posted; an account's chart and statement", async (t) => {
  const { page } = await session(t);
  const accounts = (await api(acme.key, 'GET', '/ledger/accounts?limit=100')).data;
  const own = accounts.find((a) => a.virtual_account_id === acme.va.id);
  const operating = accounts.find((a) => a.virtual_account_id === null && /operating/i.test(a.name));
  assert.ok(own && operating, `ledger accounts: ${JSON.stringify(accounts.map((a) => a.name))}`);

  await signIn(page, acme.key);
  await page.goto('/console/ledger');
  const form = page.locator('form[data-balance-check]');
  await form.getByLabel('Description').fill('Console journey: a month of bookkeeping');
  await form.getByLabel('Type').selectOption('adjustment');
  await form.getByLabel('Line 0 account').selectOption(operating.id);
  await form.getByLabel('Line 0 direction').selectOption('debit');
  await form.getByLabel('Line 0 amount').fill('12.34');
  await form.getByLabel('Line 1 account').selectOption(own.id);
  await form.getByLabel('Line 1 direction').selectOption('credit');
  await form.getByLabel('Line 1 amount').fill('12.30');
  assert.match(await form.getByRole('status').textContent(), /off by \$0\.04/);
  assert.equal(await form.getByRole('button', { name: 'Post journal entry' }).isDisabled(), true, 'an unbalanced entry cannot be sent');
  await form.getByLabel('Line 1 amount').fill('12.34');
  assert.match(await form.getByRole('status').textContent(), /Balanced/);
  await shot(page, 'ledger');
  await form.getByRole('button', { name: 'Post journal entry' }).click();
  await page.getByRole('status').filter({ hasText: /Journal entry je_\w+ posted\./ }).waitFor();
  assert.ok(await page.getByRole('cell', { name: 'Console journey: a month of bookkeeping' }).first().isVisible(), 'the new entry is listed at once');
  const entries = (await api(acme.key, 'GET', `/ledger/entries?virtual_account_id=${acme.va.id}&type=adjustment`)).data;
  assert.ok(entries.some((e) => e.description === 'Console journey: a month of bookkeeping' && e.amount === 1234 && e.direction === 'credit'));

  // The account's chart draws its posted balances; its statement downloads.
  await page.goto(`/console/accounts/${acme.va.id}`);
  const chart = page.getByTestId('balance-chart');
  assert.ok(Number(await chart.getAttribute('data-points')) >= 2, 'a point for each posting instant');
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /^Statement for / }).first().click()]);
  const csv = readFileSync(await download.path(), 'utf8');
  assert.match(download.suggestedFilename(), new RegExp(`^statement-${acme.va.id}-\\d{4}-\\d{2}\\.csv$`));
  assert.match(csv, /Console journey: a month of bookkeeping/);
});
