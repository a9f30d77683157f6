// The client against a real `treasury serve` (sandbox, TREASURY_WEBHOOK_ALLOW_PRIVATE=true):
// the whole journey of issue #17, every error class from a real answer (5xx aside: see
// unit.test.ts), a real 429 retried after Retry-After, and a final check that every route of the
// API was called. Needs TREASURY_BASE_URL and TREASURY_OPERATOR_KEY; fails without them.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Treasury, {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
  WebhookVerificationError,
  type Fetch,
  type KYBSubmitRequest,
  type Payment,
  type PaymentCreateParams,
  type VirtualAccount,
  type KYBVerification,
  type WebhookEndpointWithSecret,
  type InboundTransfer,
  type JournalEntry,
  type BookTransfer,
  type WithResponse,
  type LedgerEntry,
  type Source,
  type ListJournalEntriesParams,
} from '../src/index.js';
import { ROUTES, matchRoute, poll, sleep } from './helpers.js';

const BASE_URL = process.env['TREASURY_BASE_URL'];
const OPERATOR_KEY = process.env['TREASURY_OPERATOR_KEY'];
if (!BASE_URL || !OPERATOR_KEY) {
  throw new Error(
    'TREASURY_BASE_URL (e.g. http://127.0.0.1:8080/v1) and TREASURY_OPERATOR_KEY must be set: ' +
      'this suite runs against a real `treasury serve`.',
  );
}

const RUN = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
const basePath = new URL(BASE_URL).pathname.replace(/\/+$/, '');

// Every request of every client goes through this fetch, which notes the route it hit and the
// status it got (for the checks that a refusal is not retried).
const hits = new Set<string>();
const statuses: number[] = [];
const recordingFetch: Fetch = async (input, init) => {
  const url = new URL(String(input));
  const route = matchRoute(init?.method ?? 'GET', url.pathname.slice(basePath.length));
  if (route) hits.add(route);
  const res = await fetch(input, init);
  statuses.push(res.status);
  return res;
};
// The statuses answered since `mark`, less the attempts a busy server refused for now (429, 503),
// which the client rightly retries unchanged: one per call that was answered.
const answeredSince = (mark: number) => statuses.slice(mark).filter((s) => s !== 429 && s !== 503);
const newClient = (apiKey: string, extra: { maxRetries?: number } = {}) =>
  new Treasury({ apiKey, baseURL: BASE_URL, fetch: recordingFetch, ...extra });

const op = newClient(OPERATOR_KEY);

/** What the test's webhook receiver got. */
interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
  /** The path it was POSTed to (each endpoint of the journey has its own on the receiver). */
  path?: string;
}
const deliveries: Delivery[] = [];
let receiver: http.Server;
let receiverURL: string;

async function waitForDelivery(pred: (d: Delivery) => boolean, timeoutMs = 15_000): Promise<Delivery> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const d = deliveries.find(pred);
    if (d) return d;
    if (Date.now() > deadline) {
      throw new Error(`no such delivery within ${timeoutMs} ms; got ${deliveries.map((x) => JSON.parse(x.body).type).join(', ')}`);
    }
    await sleep(50);
  }
}
const eventOf = (d: Delivery) => JSON.parse(d.body) as { id: string; type: string; data: { object: any } };

before(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), path: req.url });
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverURL = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/treasury`;
});

after(async () => {
  receiver.closeAllConnections?.();
  await new Promise<void>((r) => receiver.close(() => r()));
});

const DEST = { account_number: '123456789', routing_number: '021000021', name: 'Initech LLC' };
const ORIGINATOR = { name: 'Globex Corp', account_number: '987654321', routing_number: '021000021' };
const ADDRESS = { line1: '500 Congress Ave', city: 'Austin', state: 'TX' as const, postal_code: '78701', country: 'US' as const };

function kybBody(virtual_account_id: string, legal_name: string, ein: string): KYBSubmitRequest {
  return {
    virtual_account_id,
    business: {
      legal_name,
      ein,
      entity_type: 'llc',
      formation_date: '2015-06-01',
      formation_state: 'DE',
      address: { ...ADDRESS, line2: 'Suite 200' },
      website: 'https://example.com',
      naics_code: '541214',
      phone: '+15125550100',
    },
    beneficial_owners: [
      {
        first_name: 'Jane',
        last_name: 'Doe',
        date_of_birth: '1980-04-12',
        ssn_last4: '1234',
        ownership_percentage: '60',
        is_control_person: true,
        title: 'CEO',
        address: ADDRESS,
      },
      {
        first_name: 'John',
        last_name: 'Roe',
        date_of_birth: '1975-09-30',
        ssn_last4: '5678',
        ownership_percentage: 25.5,
        is_control_person: false,
        address: ADDRESS,
      },
    ],
  };
}

/** Expects `promise` to reject with `cls` (and `code`, if given); returns the error. */
async function expectError<E extends Error>(
  promise: Promise<unknown>,
  cls: new (...args: any[]) => E,
  code?: string,
): Promise<E> {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    if (code !== undefined) assert.equal((e as any).code, code, (e as Error).message);
    assert.ok((e as any).requestId, 'the error carries the request id');
    return e;
  }
  assert.fail(`expected ${cls.name}, but the call succeeded`);
}

const today = new Date().toISOString().slice(0, 10);
const month = today.slice(0, 7);
const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);

describe(`journey against ${BASE_URL} (run ${RUN})`, () => {
  let platformId: string;
  let sandboxKey: string;
  let liveKey: string;
  let sb: Treasury;
  let va1: VirtualAccount; // funded, KYB approved: sends the payments
  let va2: VirtualAccount; // never verified: freeze, unfreeze, close; kyb_not_approved
  let va3: VirtualAccount; // KYB pending_review, approved by a simulation
  let va4: VirtualAccount; // KYB pending_review, rejected by the operator
  let webhook: WebhookEndpointWithSecret;
  let beforeFunding: string;
  let seedTransfer: InboundTransfer; // the RTP inbound transfer that funds va1
  let manualEntry: JournalEntry; // the ledger test's shorthand fee entry
  let funding: JournalEntry; // the operator's funding of the platform's sandbox
  const completed: Payment[] = [];

  test('the operator registers, lists, configures, approves, opens live and funds a platform', async () => {
    const body = { name: `node client ${RUN}`, contact_email: 'ops@example.com', metadata: { run: RUN } };
    const platform = await op.platforms.register(body, { idempotencyKey: `register-${RUN}` });
    assert.equal(platform.object, 'platform');
    assert.equal(platform.status, 'pending_approval');
    assert.equal(platform.lastResponse.idempotentReplayed, false);
    platformId = platform.id;

    // The same request with the same key replays the first answer.
    const replay = await op.platforms.register(body, { idempotencyKey: `register-${RUN}` });
    assert.equal(replay.id, platformId);
    assert.equal(replay.lastResponse.idempotentReplayed, true);

    const got = await op.platforms.retrieve(platformId);
    assert.equal(got.name, body.name);
    assert.deepEqual(got.metadata, { run: RUN });

    // Newest first: ours is on one of the first pages of two.
    let pagesSeen = 0;
    let found = false;
    for await (const page of op.platforms.list({ limit: 2 }).pages()) {
      pagesSeen++;
      assert.ok(page.data.length <= 2);
      if (page.data.some((p) => p.id === platformId)) {
        found = true;
        break;
      }
    }
    assert.ok(found, `platform not found in ${pagesSeen} pages`);

    const configured = await op.platforms.update(platformId, {
      fee_schedule: { rtp: 40 },
      revenue_share_rate: '0.30',
      interest_rate: '0.05',
    });
    assert.equal(configured.fee_schedule.rtp, 40);
    assert.equal(configured.revenue_share_rate, '0.30');

    const approved = await op.platforms.approve(platformId);
    assert.equal(approved.status, 'approved');
    assert.match(approved.sandbox_api_key.secret, /^sk_sandbox_[0-9A-Za-z]{40}$/);
    sandboxKey = approved.sandbox_api_key.secret;

    const live = await op.platforms.enableLive(platformId);
    assert.equal(live.live_enabled, true);
    assert.match(live.live_api_key.secret, /^sk_live_/);
    liveKey = live.live_api_key.secret;

    funding = await op.platforms.fund(platformId, { amount: 1_000_000, environment: 'sandbox', description: `run ${RUN}` });
    assert.equal(funding.object, 'journal_entry');
    assert.equal(funding.type, 'funding');
    assert.equal(funding.entries.length, 2);
    // A funding is its own source, and so is each of its lines.
    assert.deepEqual(funding.source, { type: 'journal_entry', id: funding.id });
    assert.deepEqual(funding.entries.map((e) => e.source), [funding.source, funding.source]);

    sb = newClient(sandboxKey);
  });

  test('the platform reads itself, sets sandbox delays, and manages API keys', async () => {
    const me = await sb.platform.retrieve();
    assert.equal(me.id, platformId);
    assert.equal(me.environment, 'sandbox');

    const settings = await sb.platform.settings.retrieve();
    assert.equal(settings.object, 'platform_settings');
    const updated = await sb.platform.settings.update({
      sandbox: { auto_settle: true, ach_same_day_delay_seconds: 1, ach_standard_delay_seconds: 1 },
    });
    assert.equal(updated.sandbox?.ach_same_day_delay_seconds, 1);
    assert.equal(updated.sandbox?.ach_standard_delay_seconds, 1);

    const key = await sb.platform.apiKeys.create({ name: `ci ${RUN}` });
    assert.match(key.secret, /^sk_sandbox_/);
    assert.equal(key.prefix, key.secret.slice(0, 12));
    const listed = await sb.platform.apiKeys.list({ environment: 'sandbox' }).toArray();
    assert.ok(listed.some((k) => k.id === key.id));
    assert.ok(listed.every((k) => k.secret === undefined), 'lists never show secrets');

    // The new key works; rolled with no grace, it stops at once (401 from the real server).
    assert.equal((await newClient(key.secret).platform.retrieve()).id, platformId);
    const rolled = await sb.platform.apiKeys.roll(key.id, { grace_seconds: 0 });
    assert.notEqual(rolled.secret, key.secret);
    const err = await expectError(newClient(key.secret).platform.retrieve(), AuthenticationError, 'unauthorized');
    assert.equal(err.status, 401);

    const revoked = await sb.platform.apiKeys.revoke(rolled.id);
    assert.ok(revoked.revoked_at);
  });

  test('a webhook endpoint pointed at the test receiver', async () => {
    webhook = await sb.webhooks.create({
      url: receiverURL,
      events: ['*'],
      description: `node client ${RUN}`,
      retry_policy: { max_attempts: 3, initial_delay_seconds: 1, max_delay_seconds: 2 },
    });
    assert.match(webhook.secret, /^whsec_/);
    assert.equal(webhook.status, 'enabled');
  });

  test('virtual accounts are opened, read and listed', async () => {
    const open = (suffix: string, type: 'checking' | 'savings' = 'checking') =>
      sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-${suffix}-${RUN}`, type, metadata: { run: RUN } });
    [va1, va2, va3, va4] = await Promise.all([open('a'), open('b', 'savings'), open('c'), open('d')]);
    assert.equal(va1.object, 'virtual_account');
    assert.equal(va1.status, 'active');
    assert.equal(va1.kyb_status, 'not_started');
    assert.match(va1.account_number, /^[1-9][0-9]{11}$/);
    assert.equal((await sb.virtualAccounts.retrieve(va1.id)).id, va1.id);
    const mine = await sb.virtualAccounts.list({ entity_ref: va1.entity_ref }).toArray();
    assert.deepEqual(mine.map((a) => a.id), [va1.id]);
    const active = await sb.virtualAccounts.list({ status: 'active', limit: 2 }).toArray();
    assert.ok(active.length >= 4);
  });

  test('KYB: automatic approval, pending review decided by a simulation and by the operator', async () => {
    const k1 = await sb.kyb.create(kybBody(va1.id, `Acme Widgets ${RUN} LLC`, '12-3456789'));
    // The sandbox decides asynchronously: it may already have when the answer is read.
    assert.ok(['pending', 'approved'].includes(k1.status), k1.status);
    assert.equal(k1.business.ein.slice(-4), '6789');
    const k3 = await sb.kyb.submit(kybBody(va3.id, `Review Co ${RUN}`, '98-7651111'));
    const k4 = await sb.kyb.create(kybBody(va4.id, `Reject Co ${RUN}`, '555551111'));

    const approved = await poll(() => sb.kyb.retrieve(k1.id), (k) => k.status !== 'pending');
    assert.equal(approved.status, 'approved');
    assert.equal(approved.decision?.method, 'automatic');
    const inReview = await Promise.all(
      [k3, k4].map((k) => poll(() => sb.kyb.retrieve(k.id), (v: KYBVerification) => v.status !== 'pending')),
    );
    for (const k of inReview) {
      assert.equal(k.status, 'pending_review');
      assert.ok(k.review?.eta);
    }

    const bySimulation = await sb.simulations.kyb.decide(k3.id, { outcome: 'approved' });
    assert.equal(bySimulation.status, 'approved');
    assert.equal(bySimulation.decision?.method, 'manual');
    const byOperator = await op.operator.kyb.decide(k4.id, {
      outcome: 'rejected',
      reasons: [{ code: 'document_mismatch', message: 'The articles name another business.', field: 'business.legal_name' }],
    });
    assert.equal(byOperator.status, 'rejected');
    assert.equal(byOperator.decision?.reasons[0]?.code, 'document_mismatch');

    const listed = await sb.kyb.list({ virtual_account_id: va1.id }).toArray();
    assert.deepEqual(listed.map((k) => k.id), [k1.id]);
    assert.equal((await sb.virtualAccounts.retrieve(va1.id)).kyb_status, 'approved');

    // 409 from the real server: the business is already approved.
    const again = await expectError(sb.kyb.create(kybBody(va1.id, `Acme Widgets ${RUN} LLC`, '12-3456789')), ConflictError, 'kyb_already_approved');
    assert.equal(again.resourceId, k1.id);
  });

  test('inbound funds over RTP credit the account at once', async () => {
    beforeFunding = new Date().toISOString();
    await sleep(20);
    const itx = await sb.simulations.inboundTransfers.create({
      virtual_account_id: va1.id,
      amount: 5_000_000,
      rail: 'rtp',
      originator: ORIGINATOR,
      description: `seed ${RUN}`,
    });
    assert.equal(itx.object, 'inbound_transfer');
    seedTransfer = itx;
    const account = await poll(() => sb.virtualAccounts.retrieve(va1.id), (a) => a.balance.available >= 5_000_000);
    assert.equal(account.balance.posted, 5_000_000);
  });

  test('payments on all four rails complete; one fails; one is canceled', async () => {
    const pay = (rail: Payment['rail'], amount: number, destination = DEST) =>
      sb.payments.create({ virtual_account_id: va1.id, amount, rail, destination, description: `${rail} ${RUN}`, metadata: { run: RUN } });

    const created = await Promise.all([
      pay('rtp', 10_000),
      pay('fednow', 11_000),
      pay('ach_same_day', 12_000),
      pay('ach_standard', 13_000),
    ]);
    for (const p of created) {
      assert.equal(p.object, 'payment');
      assert.ok(['pending', 'submitted', 'completed'].includes(p.status), p.status);
      assert.equal(p.idempotency_key, p.lastResponse.idempotencyKey, 'the body key defaults to the header');
    }
    assert.equal(created[0]!.fee, 40, 'the fee schedule the operator set');

    const done = await Promise.all(created.map((p) => poll(() => sb.payments.retrieve(p.id), (x) => ['completed', 'failed'].includes(x.status))));
    for (const p of done) {
      assert.equal(p.status, 'completed', `${p.rail}: ${JSON.stringify(p.failure)}`);
      assert.ok(p.completed_at);
    }
    completed.push(...done);

    // A destination that does not exist fails, with a recommendation.
    const failing = await pay('rtp', 1_000, { ...DEST, account_number: '4000000003' });
    const failed = await poll(() => sb.payments.retrieve(failing.id), (x) => ['completed', 'failed'].includes(x.status));
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure?.code, 'no_account');
    assert.equal(failed.failure?.retry_recommendation.action, 'update_destination');

    // An ACH payment stays pending for a second: cancel it now.
    const pending = await pay('ach_standard', 2_000);
    assert.equal(pending.status, 'pending');
    const canceled = await sb.payments.cancel(pending.id);
    assert.equal(canceled.status, 'canceled');
    assert.ok(canceled.canceled_at);

    // Cancelling a completed payment: 409 payment_not_cancelable.
    await expectError(sb.payments.cancel(done[0]!.id), ConflictError, 'payment_not_cancelable');
  });

  test('lists filter on metadata (deepObject), the filter kept on every page', async () => {
    // A client of its own that notes every URL it requests (and still records routes).
    const urls: URL[] = [];
    const filtered = new Treasury({
      apiKey: sandboxKey,
      baseURL: BASE_URL,
      // Only the answered attempts: one a busy server refused for now (429, 503) is retried unchanged.
      fetch: async (input, init) => {
        const res = await recordingFetch(input, init);
        if (res.status !== 429 && res.status !== 503) urls.push(new URL(String(input)));
        return res;
      },
    });
    const tag = `mf-${RUN}`; // only this test's resources carry it
    const metas: Record<string, string>[] = [
      { batch: tag, region: 'east', tier: 'gold', 'order id': 'A&B' },
      { batch: tag, region: 'east', tier: 'silver' },
      { batch: tag, region: 'west', tier: 'gold', 'order id': 'A' },
    ];
    const [vx, vy, vz] = await Promise.all(
      metas.map((metadata, i) =>
        sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-mf${i}-${RUN}`, type: 'checking', metadata }),
      ),
    );
    const [px, py, pz] = await Promise.all(
      metas.map((metadata, i) =>
        sb.payments.create({ virtual_account_id: va1.id, amount: 500 + i, rail: 'rtp', destination: DEST, metadata }),
      ),
    );

    /** The ids a filtered list returns, walking pages of one item; checks every page's request kept the filter. */
    const ids = async (resource: 'payments' | 'virtualAccounts', metadata: Record<string, string>) => {
      urls.length = 0;
      const list =
        resource === 'payments'
          ? filtered.payments.list({ metadata, limit: 1 })
          : filtered.virtualAccounts.list({ metadata, limit: 1 });
      const got = (await list.toArray()).map((x) => x.id).sort();
      assert.equal(urls.length, Math.max(1, got.length), `one request per page: ${urls.join(' ')}`);
      for (const [i, u] of urls.entries()) {
        const sent = Object.fromEntries(
          [...u.searchParams].filter(([k]) => k.startsWith('metadata[')).map(([k, v]) => [k.slice(9, -1), v]),
        );
        assert.deepEqual(sent, metadata, `page ${i + 1}: ${u}`);
        assert.equal(u.searchParams.has('cursor'), i > 0);
      }
      return got;
    };
    const sorted = (...xs: { id: string }[]) => xs.map((x) => x.id).sort();

    for (const [resource, [x, y, z]] of [
      ['virtualAccounts', [vx!, vy!, vz!]],
      ['payments', [px!, py!, pz!]],
    ] as const) {
      assert.deepEqual(await ids(resource, { batch: tag }), sorted(x, y, z), `${resource}: one pair`);
      assert.deepEqual(await ids(resource, { batch: tag, region: 'east' }), sorted(x, y), `${resource}: two pairs`);
      assert.deepEqual(await ids(resource, { region: 'east', tier: 'gold', batch: tag }), sorted(x), `${resource}: three pairs`);
      assert.deepEqual(await ids(resource, { 'order id': 'A&B' }), sorted(x), `${resource}: a key and value needing encoding`);
      assert.deepEqual(await ids(resource, { 'order id': 'A', batch: tag }), sorted(z), `${resource}: "A" is not "A&B"`);
      assert.deepEqual(await ids(resource, { batch: tag, region: 'north' }), [], `${resource}: no match`);
    }
    assert.ok(urls.at(-1)!.search.includes('metadata%5Bregion%5D=north'), String(urls.at(-1)));

    // Other filters combine with it; the server refuses a bad filter with 400 param metadata.
    const mineOnly = await sb.payments.list({ virtual_account_id: va1.id, metadata: { batch: tag, tier: 'gold' } }).toArray();
    assert.deepEqual(mineOnly.map((p) => p.id).sort(), sorted(px!, pz!));
    const tooLong = await expectError(sb.virtualAccounts.list({ metadata: { ['k'.repeat(41)]: 'v' } }).firstPage(), BadRequestError);
    assert.match(tooLong.param ?? '', /^metadata($|\.)/); // the server names the key: `metadata.kkk…`
  });

  test('with auto_settle off, simulations complete and fail submitted ACH payments', async () => {
    await sb.platform.settings.update({ sandbox: { auto_settle: false } });
    try {
      const body = (rail: Payment['rail'], amount: number): PaymentCreateParams => ({
        virtual_account_id: va1.id,
        amount,
        rail,
        destination: DEST,
      });
      const [a, b] = await Promise.all([sb.payments.create(body('ach_same_day', 3_000)), sb.payments.create(body('ach_standard', 4_000))]);
      await Promise.all([a, b].map((p) => poll(() => sb.payments.retrieve(p.id), (x) => x.status === 'submitted')));
      const ok = await sb.simulations.payments.complete(a.id);
      assert.equal(ok.status, 'completed');
      const ko = await sb.simulations.payments.fail(b.id, { network_code: 'R01' });
      assert.equal(ko.status, 'failed');
      assert.equal(ko.failure?.network_code, 'R01');
      assert.equal(ko.failure?.code, 'insufficient_funds');
      assert.equal(ko.failure?.retry_recommendation.action, 'retry_later');
    } finally {
      await sb.platform.settings.update({ sandbox: { auto_settle: true } });
    }
  });

  test('an idempotency key replays on the real server, and conflicts with another body', async () => {
    const key = `pay-${RUN}`;
    const body: PaymentCreateParams = { virtual_account_id: va1.id, amount: 777, rail: 'rtp', destination: DEST };
    const first = await sb.payments.create(body, { idempotencyKey: key });
    assert.equal(first.lastResponse.status, 201);
    assert.equal(first.idempotency_key, key);
    const replay = await sb.payments.create(body, { idempotencyKey: key });
    assert.equal(replay.lastResponse.status, 200);
    assert.equal(replay.lastResponse.idempotentReplayed, true);
    assert.equal(replay.id, first.id);
    const mark = statuses.length;
    const conflict = await expectError(
      sb.payments.create({ ...body, amount: 778 }, { idempotencyKey: key }),
      ConflictError,
      'idempotency_conflict',
    );
    assert.equal(conflict.status, 409);
    assert.equal(conflict.resourceId, first.id);
    assert.deepEqual(answeredSince(mark), [409], 'idempotency_conflict is not retried');
    const found = await sb.payments.list({ idempotency_key: key }).toArray();
    assert.deepEqual(found.map((p) => p.id), [first.id]);
  });

  test('a creating POST retried with the same idempotency key makes no second resource', async () => {
    const key = `va-${RUN}`;
    const body = { platform_id: platformId, entity_ref: `biz-idem-${RUN}`, type: 'checking' as const };
    const first = await sb.virtualAccounts.create(body, { idempotencyKey: key });
    assert.equal(first.lastResponse.status, 201);
    assert.equal(first.lastResponse.idempotentReplayed, false);
    // As if the first answer had been lost: the same request again.
    const again = await sb.virtualAccounts.create(body, { idempotencyKey: key });
    assert.equal(again.lastResponse.status, 200);
    assert.equal(again.lastResponse.idempotentReplayed, true);
    assert.equal(again.lastResponse.idempotencyKey, key);
    assert.equal(again.id, first.id);
    assert.equal(again.account_number, first.account_number);
    const mine = await sb.virtualAccounts.list({ entity_ref: body.entity_ref }).toArray();
    assert.deepEqual(mine.map((a) => a.id), [first.id], 'one account, not two');
    await expectError(
      sb.virtualAccounts.create({ ...body, type: 'savings' }, { idempotencyKey: key }),
      ConflictError,
      'idempotency_conflict',
    );
  });

  test('every list walks all its pages (limit 2)', async () => {
    const pages = [];
    for await (const page of sb.payments.list({ virtual_account_id: va1.id, limit: 2 }).pages()) pages.push(page);
    assert.ok(pages.length >= 4, `${pages.length} pages`);
    assert.ok(pages.slice(0, -1).every((p) => p.has_more && p.next_cursor && p.data.length === 2));
    assert.equal(pages.at(-1)!.has_more, false);
    const viaIterator: string[] = [];
    for await (const p of sb.payments.list({ virtual_account_id: va1.id, limit: 2 })) viaIterator.push(p.id);
    assert.deepEqual(viaIterator, pages.flatMap((p) => p.data.map((x) => x.id)));
    assert.equal(new Set(viaIterator).size, viaIterator.length, 'no item twice');
    for (const p of completed) assert.ok(viaIterator.includes(p.id));
    const completedOnly = await sb.payments.list({ status: 'completed', rail: 'rtp', created_after: today }).toArray();
    assert.ok(completedOnly.every((p) => p.status === 'completed' && p.rail === 'rtp'));
  });

  test('error classes from real answers: 400, 403, 404, 422', async () => {
    const bad = await expectError(
      sb.payments.create({ virtual_account_id: va1.id, amount: 100, rail: 'rtp', destination: { ...DEST, routing_number: '123456789' } }),
      BadRequestError,
      'invalid_request',
    );
    assert.equal(bad.status, 400);
    assert.equal(bad.param, 'destination.routing_number');

    const forbidden = await expectError(sb.platforms.list().firstPage(), PermissionDeniedError, 'forbidden');
    assert.equal(forbidden.status, 403);
    const liveOnSandboxRoute = newClient(liveKey).simulations.inboundTransfers.create({
      virtual_account_id: va1.id,
      amount: 100,
      rail: 'rtp',
      originator: ORIGINATOR,
    });
    await expectError(liveOnSandboxRoute, PermissionDeniedError, 'forbidden');

    const missing = await expectError(sb.payments.retrieve('pay_0000000000000000000000000a'), NotFoundError, 'not_found');
    assert.equal(missing.status, 404);
    await expectError(sb.virtualAccounts.retrieve('va_does_not_exist'), NotFoundError);

    const notApproved = await expectError(
      sb.payments.create({ virtual_account_id: va2.id, amount: 100, rail: 'rtp', destination: DEST }),
      UnprocessableEntityError,
      'kyb_not_approved',
    );
    assert.equal(notApproved.status, 422);
    assert.equal(notApproved.resourceId, va2.id);
    await expectError(
      sb.payments.create({ virtual_account_id: va3.id, amount: 100, rail: 'rtp', destination: DEST }),
      UnprocessableEntityError,
      'insufficient_funds',
    );
  });

  test('a real 429: a burst over a low rate limit is refused, and the client waits Retry-After and succeeds', async () => {
    const platform = await op.platforms.create({ name: `node client rate ${RUN}`, contact_email: 'ops@example.com' });
    const approved = await op.platforms.approve(platform.id);
    const limited = await op.platforms.update(platform.id, { rate_limit: { per_second: 1, burst: 1 } });
    assert.deepEqual(limited.rate_limit, { per_second: 1, burst: 1 });
    const key = approved.sandbox_api_key.secret;

    const noRetries = newClient(key, { maxRetries: 0 });
    const retrying = newClient(key);
    for (let round = 1; ; round++) {
      // Empty the bucket: a burst until the server refuses one.
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => noRetries.platform.retrieve()));
      const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
      assert.ok(refused.length > 0, 'a burst of 4 over a bucket of 1 got no 429 (is the server run with TREASURY_RATE_LIMIT=off?)');
      const e = refused[0];
      assert.ok(e instanceof RateLimitError, String(e));
      assert.equal(e.status, 429);
      assert.equal(e.code, 'rate_limited');
      assert.ok(e.retryAfter !== undefined && e.retryAfter >= 1, `Retry-After: ${e.headers.get('retry-after')}`);

      const t0 = performance.now();
      const me = await retrying.platform.retrieve();
      const waited = performance.now() - t0;
      assert.equal(me.id, platform.id);
      if (me.lastResponse.attempts === 1 && round < 3) continue; // the bucket refilled in between: again
      assert.ok(me.lastResponse.attempts >= 2, 'the call was retried');
      assert.ok(waited >= 900, `waited only ${waited.toFixed(0)} ms for a Retry-After of ${e.retryAfter} s`);
      break;
    }
  });

  test('the ledger: accounts, three forms of manual journal entry, entries over pages, the CSV export', async () => {
    const accounts = await sb.ledger.accounts.list({ limit: 2 }).toArray();
    const operating = accounts.find((a) => a.name === 'platform_operating');
    const mine = accounts.find((a) => a.virtual_account_id === va1.id);
    assert.ok(operating && mine, accounts.map((a) => a.name).join(','));
    assert.ok(operating.balances.posted >= 1_000_000, 'the operator funded it');

    const fee = await sb.ledger.entries.create({
      type: 'fee',
      description: `Monthly fee ${RUN}`,
      virtual_account_id: va1.id,
      direction: 'debit',
      amount: 500,
      metadata: { run: RUN },
    });
    assert.equal(fee.object, 'journal_entry');
    assert.equal(fee.entries.length, 2);
    assert.equal(fee.lastResponse.status, 201);
    assert.deepEqual(fee.source, { type: 'journal_entry', id: fee.id }, 'the POST answer carries the source too');
    assert.deepEqual(fee.entries.map((e) => e.source), [fee.source, fee.source], 'and so does each of its lines');
    manualEntry = fee;

    const lines = await sb.ledger.entries.create({
      type: 'adjustment',
      description: `Goodwill credit ${RUN}`,
      lines: [
        { virtual_account_id: va1.id, direction: 'credit', amount: 300 },
        { ledger_account_id: operating.id, direction: 'debit', amount: 300 },
      ],
    });
    assert.equal(lines.entries.length, 2);
    assert.deepEqual(lines.entries.map((e) => e.source), [
      { type: 'journal_entry', id: lines.id },
      { type: 'journal_entry', id: lines.id },
    ]);

    // A reversal is a manual entry of its own: its source is itself, not the entry it reverses.
    const reversal = await sb.ledger.entries.create({ reverses: fee.id });
    assert.equal(reversal.reverses, fee.id);
    assert.deepEqual(reversal.source, { type: 'journal_entry', id: reversal.id });
    assert.ok(reversal.entries.every((e) => e.source.type === 'journal_entry' && e.source.id === reversal.id));

    const unbalanced = await expectError(
      sb.ledger.entries.create({
        type: 'correction',
        description: 'unbalanced',
        lines: [
          { virtual_account_id: va1.id, direction: 'credit', amount: 300 },
          { ledger_account_id: operating.id, direction: 'debit', amount: 200 },
        ],
      }),
      BadRequestError,
      'unbalanced_entry',
    );
    assert.equal(unbalanced.status, 400);

    let pages = 0;
    const entries = [];
    for await (const page of sb.ledger.entries.list({ virtual_account_id: va1.id, limit: 2 }).pages()) {
      pages++;
      entries.push(...page.data);
    }
    assert.ok(pages > 1);
    assert.ok(entries.some((e) => e.journal_entry_id === fee.id));
    const credits = await sb.ledger.entries.list({ ledger_account_id: mine.id, direction: 'credit', type: 'adjustment' }).toArray();
    assert.ok(credits.some((e) => e.journal_entry_id === lines.id));

    const csv = await sb.ledger.exports.retrieve({ created_after: today, created_before: tomorrow });
    assert.equal(typeof csv, 'string');
    assert.match(csv.split('\n')[0]!, /^entry_id,journal_entry_id,ledger_account_id/);
    assert.ok(csv.includes(fee.id));
  });

  test('journal entries are retrieved with their lines and source; an unknown id is 404', async () => {
    const manual = await sb.ledger.journalEntries.retrieve(manualEntry.id);
    assert.equal(manual.lastResponse.status, 200);
    assert.equal(manual.object, 'journal_entry');
    assert.equal(manual.id, manualEntry.id);
    assert.deepEqual(manual.source, { type: 'journal_entry', id: manualEntry.id });
    assert.equal(manual.type, 'fee');
    assert.equal(manual.entries.length, 2);
    assert.deepEqual(new Set(manual.entries.map((e) => e.journal_entry_id)), new Set([manualEntry.id]));
    assert.deepEqual(
      manual.entries.map((e) => e.id).sort(),
      manualEntry.entries.map((e) => e.id).sort(),
      'the same lines as the POST answer',
    );

    // The simulated inbound transfer's journal entry, via the transfer's journal_entry_id.
    const jeId = seedTransfer.journal_entry_id;
    assert.match(jeId, /^je_/);
    const credited = await sb.ledger.journalEntries.retrieve(jeId);
    assert.equal(credited.id, jeId);
    assert.deepEqual(credited.source, { type: 'inbound_transfer', id: seedTransfer.id });
    assert.ok(credited.entries.length >= 2);
    assert.ok(credited.entries.some((e) => e.virtual_account_id === va1.id && e.direction === 'credit' && e.amount === 5_000_000));

    const missing = await expectError(
      sb.ledger.journalEntries.retrieve('je_0000000000000000000000000a'),
      NotFoundError,
    );
    assert.equal(missing.status, 404);
  });

  test('links: a payment, a transfer or a manual entry leads to its journal entry, and every ledger entry names its source', async () => {
    const JE = /^je_[0-9a-hjkmnp-tv-z]{26}$/;
    /** GET /ledger/journal-entries/{id}: checks that the entry and each of its lines name `source`. */
    const entryOf = async (id: string | null, source: Source, status: JournalEntry['status']) => {
      assert.match(id ?? 'null', JE);
      const je = await sb.ledger.journalEntries.retrieve(id!);
      assert.equal(je.id, id);
      assert.deepEqual(je.source, source, `${id}: the journal entry's source`);
      assert.equal(je.status, status, `${id}: status`);
      assert.ok(je.entries.length >= 2);
      for (const e of je.entries) {
        assert.equal(e.journal_entry_id, je.id);
        assert.deepEqual(e.source, source, `${e.id}: a line's source`);
        assert.equal(e.status, status, `${e.id}: a line's status`);
      }
      const total = (d: 'debit' | 'credit') => je.entries.filter((e) => e.direction === d).reduce((n, e) => n + e.amount, 0);
      assert.equal(total('debit'), total('credit'), `${id} is balanced`);
      return je;
    };
    /** A payment's lines on its own account: amount and fee, each a debit. */
    const accountLines = (je: JournalEntry, p: Payment) =>
      je.entries.filter((e) => e.virtual_account_id === p.virtual_account_id).map((e) => [e.type, e.direction, e.amount]).sort();
    const payLines = (p: Payment) => [['payment', 'debit', p.amount], ['payment_fee', 'debit', p.fee]].sort();

    // The payments completed earlier: each names a posted entry holding amount + fee, its source the payment.
    const linked = new Map<string, JournalEntry>(); // journal entry id → the entry, for the ledger list below
    for (const p of completed) {
      const je = await entryOf(p.journal_entry_id, { type: 'payment', id: p.id }, 'posted');
      assert.equal(je.type, 'payment');
      assert.deepEqual(accountLines(je, p), payLines(p), p.rail);
      linked.set(je.id, je);
    }
    assert.equal(new Set(completed.map((p) => p.journal_entry_id)).size, completed.length, 'one journal entry per payment');

    // The inbound transfer, the funding and the manual entry of the earlier tests.
    linked.set(seedTransfer.journal_entry_id, await entryOf(seedTransfer.journal_entry_id, { type: 'inbound_transfer', id: seedTransfer.id }, 'posted'));
    const funded = await entryOf(funding.id, { type: 'journal_entry', id: funding.id }, 'posted');
    assert.equal(funded.type, 'funding');
    linked.set(funded.id, funded);
    linked.set(manualEntry.id, await entryOf(manualEntry.id, { type: 'journal_entry', id: manualEntry.id }, 'posted'));

    // A book transfer to an account of its own (which needs no KYB to receive).
    const receiver = await sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-links-${RUN}`, type: 'checking' });
    const bt = await sb.bookTransfers.create({ from_virtual_account_id: va1.id, to_virtual_account_id: receiver.id, amount: 1_500, description: `links ${RUN}` });
    const btEntry = await entryOf(bt.journal_entry_id, { type: 'book_transfer', id: bt.id }, 'posted');
    assert.deepEqual(
      btEntry.entries.map((e) => [e.virtual_account_id, e.direction, e.amount]).sort(),
      [[va1.id, 'debit', 1_500], [receiver.id, 'credit', 1_500]].sort(),
    );
    linked.set(btEntry.id, btEntry);

    // A payment names its entry from its creation on: pending while it waits, posted at completion;
    // a return after settlement leaves it posted and reversed by a payment_reversal of the same source.
    // Another whose hold is released (failed before settling) leaves its entry archived.
    await sb.platform.settings.update({ sandbox: { auto_settle: false } });
    let returned: WithResponse<Payment>, released: WithResponse<Payment>;
    try {
      const body = (amount: number): PaymentCreateParams => ({
        virtual_account_id: va1.id,
        amount,
        rail: 'ach_same_day',
        destination: DEST,
        description: `links ${RUN}`,
        metadata: { run: RUN, links: 'yes' },
      });
      [returned, released] = await Promise.all([sb.payments.create(body(2_100)), sb.payments.create(body(2_200))]);
      for (const p of [returned, released]) {
        assert.equal(p.lastResponse.status, 201);
        assert.match(p.journal_entry_id ?? 'null', JE, 'the creation answer names the journal entry');
        assert.deepEqual(accountLines(await entryOf(p.journal_entry_id, { type: 'payment', id: p.id }, 'pending'), p), payLines(p));
        assert.equal((await sb.payments.retrieve(p.id)).journal_entry_id, p.journal_entry_id);
      }
      assert.notEqual(returned.journal_entry_id, released.journal_entry_id);
      const listed = await sb.payments.list({ virtual_account_id: va1.id, metadata: { links: 'yes' } }).toArray();
      assert.deepEqual(
        listed.map((p) => [p.id, p.journal_entry_id]).sort(),
        [returned, released].map((p) => [p.id, p.journal_entry_id]).sort(),
        'the list shows the same journal_entry_id',
      );
      // A replay of the creation names the same entry.
      const replay = await sb.payments.create(body(2_100), { idempotencyKey: returned.idempotency_key });
      assert.equal(replay.lastResponse.idempotentReplayed, true);
      assert.equal(replay.journal_entry_id, returned.journal_entry_id);

      const settled = await sb.simulations.payments.complete(returned.id);
      assert.equal(settled.status, 'completed');
      assert.equal(settled.journal_entry_id, returned.journal_entry_id);
      await entryOf(returned.journal_entry_id, { type: 'payment', id: returned.id }, 'posted');
      const back = await sb.simulations.payments.fail(returned.id, { network_code: 'R01' });
      assert.equal(back.status, 'failed');
      assert.equal(back.journal_entry_id, returned.journal_entry_id, 'a return does not change the payment’s journal entry');
      const original = await entryOf(returned.journal_entry_id, { type: 'payment', id: returned.id }, 'posted');
      assert.match(original.reversed_by ?? 'null', JE, 'the return reverses it');
      const reversal = await entryOf(original.reversed_by, { type: 'payment', id: returned.id }, 'posted');
      assert.equal(reversal.type, 'payment_reversal');
      assert.equal(reversal.reverses, original.id);
      const givenBack = reversal.entries.filter((e) => e.virtual_account_id === va1.id);
      assert.ok(givenBack.length > 0 && givenBack.every((e) => e.direction === 'credit'), JSON.stringify(givenBack));
      assert.equal(givenBack.reduce((n, e) => n + e.amount, 0), returned.amount + returned.fee, 'amount and fee given back');
      linked.set(original.id, original).set(reversal.id, reversal);

      const failed = await sb.simulations.payments.fail(released.id, { network_code: 'R01' });
      assert.equal(failed.status, 'failed');
      assert.equal(failed.journal_entry_id, released.journal_entry_id);
      linked.set(released.journal_entry_id!, await entryOf(released.journal_entry_id, { type: 'payment', id: released.id }, 'archived'));
    } finally {
      await sb.platform.settings.update({ sandbox: { auto_settle: true } });
    }

    // GET /ledger/entries: every line of those entries is listed, as the journal entry shows it,
    // source included (the ledger's views are written asynchronously: wait for them).
    const want = [...linked.values()].flatMap((je) => je.entries);
    const byId = (list: LedgerEntry[]) => new Map(list.map((e) => [e.id, e]));
    const listed = await poll(
      async () => byId([
        ...(await sb.ledger.entries.list({ created_after: today, limit: 100 }).toArray()),
      ]),
      (m) => want.every((e) => m.get(e.id)?.status === e.status),
    );
    for (const e of want) assert.deepEqual(listed.get(e.id), e, `${e.id} listed as its journal entry shows it`);
    // And every listed entry names a source of the right kind: a manual entry or a funding is its own.
    const prefix = { payment: 'pay_', inbound_transfer: 'itx_', book_transfer: 'bt_' } as const;
    for (const e of listed.values()) {
      if (e.source.type === 'journal_entry') assert.equal(e.source.id, e.journal_entry_id, `${e.id}: ${e.type}`);
      else assert.ok(e.source.id.startsWith(prefix[e.source.type]), `${e.id}: ${JSON.stringify(e.source)}`);
      if (['adjustment', 'fee', 'correction', 'funding'].includes(e.type)) assert.equal(e.source.type, 'journal_entry', `${e.id}: ${e.type}`);
    }
    // Filters still apply: the book transfer's lines on the receiver.
    const theirs = await sb.ledger.entries.list({ virtual_account_id: receiver.id }).toArray();
    assert.deepEqual(theirs.map((e) => [e.journal_entry_id, e.source]), [[bt.journal_entry_id, { type: 'book_transfer', id: bt.id }]]);

    // The events say the same: payment.created names the journal entry, ledger.entry.created the source.
    const created = await poll(
      () => sb.events.list({ type: 'payment.created', created_after: today }).toArray(),
      (list) => list.some((e) => (e.data.object as Payment).id === released.id),
    );
    for (const p of [...completed, returned, released]) {
      const its = created.filter((e) => (e.data.object as Payment).id === p.id);
      assert.equal(its.length, 1, `one payment.created for ${p.id}`);
      assert.equal((its[0]!.data.object as Payment).journal_entry_id, p.journal_entry_id);
    }
    // One ledger.entry.created per posted line, the line as GET shows it; none for a line released unposted.
    const postedLines = want.filter((e) => e.status === 'posted');
    const entryEvents = await poll(
      () => sb.events.list({ type: 'ledger.entry.created', created_after: today }).toArray(),
      (list) => postedLines.every((w) => list.some((e) => (e.data.object as LedgerEntry).id === w.id)),
    );
    for (const line of want) {
      const its = entryEvents.filter((ev) => (ev.data.object as LedgerEntry).id === line.id);
      assert.equal(its.length, line.status === 'posted' ? 1 : 0, `${line.id} (${line.status}): ledger.entry.created events`);
      if (its.length) assert.deepEqual(its[0]!.data.object, line, `${its[0]!.id}: the event's entry, source included`);
    }
    for (const ev of entryEvents) {
      const e = ev.data.object as LedgerEntry;
      assert.ok(e.source?.type && e.source.id, `${ev.id}: ledger.entry.created without a source`);
    }
    // …and so does its signed webhook delivery.
    const delivered = await waitForDelivery(
      (d) => eventOf(d).type === 'ledger.entry.created' && eventOf(d).data.object.journal_entry_id === returned.journal_entry_id,
    );
    const event = Treasury.webhooks.verify(delivered.body, delivered.headers, webhook.secret);
    assert.deepEqual((event.data.object as LedgerEntry).source, { type: 'payment', id: returned.id });

    // Another platform's key, or this platform's live key, does not see the payment's journal entry.
    const other = await op.platforms.register({ name: `node client links ${RUN}`, contact_email: 'ops@example.com' });
    const foreign = newClient((await op.platforms.approve(other.id)).sandbox_api_key.secret);
    for (const stranger of [foreign, newClient(liveKey)]) {
      await expectError(stranger.ledger.journalEntries.retrieve(completed[0]!.journal_entry_id!), NotFoundError, 'not_found');
      await expectError(stranger.ledger.journalEntries.retrieve(bt.journal_entry_id), NotFoundError, 'not_found');
    }
  });

  test('balances, transactions over pages, statements as JSON and CSV', async () => {
    const now = await sb.virtualAccounts.balance(va1.id);
    assert.equal(now.object, 'balance');
    const account = await sb.virtualAccounts.retrieve(va1.id);
    assert.equal(now.posted, account.balance.posted);
    const then = await sb.virtualAccounts.balance(va1.id, { as_of: beforeFunding });
    assert.equal(then.posted, 0);
    assert.equal(then.as_of.slice(0, 19), beforeFunding.slice(0, 19));

    const txPages = [];
    for await (const page of sb.virtualAccounts.transactions.list(va1.id, { limit: 2 }).pages()) txPages.push(page);
    assert.ok(txPages.length > 2);
    const txns = txPages.flatMap((p) => p.data);
    assert.ok(txns.some((t) => t.type === 'inbound_transfer' && t.amount === 5_000_000));
    assert.ok(txns.some((t) => t.type === 'payment_fee' && t.amount < 0));
    const posted = await sb.virtualAccounts.transactions.list(va1.id, { status: 'posted', type: 'payment' }).toArray();
    assert.ok(posted.length >= 4 && posted.every((t) => t.status === 'posted' && t.type === 'payment'));

    const statement = await sb.virtualAccounts.statements.retrieve(va1.id, month);
    assert.equal(statement.object, 'statement');
    assert.equal(statement.month, month);
    assert.equal(statement.closing_balance, statement.opening_balance + statement.total_in - statement.total_out);
    assert.ok(statement.transactions.length > 0);
    const csv = await sb.virtualAccounts.statements.retrieve(va1.id, month, { format: 'csv' });
    assert.equal(typeof csv, 'string');
    assert.ok(csv.includes(statement.transactions[0]!.id));
  });

  test('an account is frozen, unfrozen and closed', async () => {
    assert.equal((await sb.virtualAccounts.freeze(va2.id)).status, 'frozen');
    assert.equal((await sb.virtualAccounts.unfreeze(va2.id)).status, 'active');
    assert.equal((await sb.virtualAccounts.close(va2.id)).status, 'closed');
    assert.equal((await sb.virtualAccounts.retrieve(va2.id)).status, 'closed');
  });

  test('events are listed and read', async () => {
    const events = await sb.events.list({ type: 'payment.completed', created_after: today, limit: 2 }).toArray();
    assert.ok(events.length >= completed.length);
    assert.ok(events.every((e) => e.type === 'payment.completed'));
    const one = await sb.events.retrieve(events[0]!.id);
    assert.equal(one.id, events[0]!.id);
    assert.equal((one.data.object as Payment).object, 'payment');
  });

  test('book transfers: money moved at once, replayed by key, listed with filters; every rule refused by the server', async (ctx) => {
    const open = (suffix: string) =>
      sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-bt-${suffix}-${RUN}`, type: 'checking' });
    const [from, to, closed] = await Promise.all([open('from'), open('to'), open('closed')]);
    // The sender: KYB approved, funded with exactly $1,000.00. The receiver never passes KYB: it need not.
    const k = await sb.kyb.create(kybBody(from.id, `Book Transfer Co ${RUN}`, '12-3450002'));
    assert.equal((await poll(() => sb.kyb.retrieve(k.id), (x) => x.status !== 'pending')).status, 'approved');
    await sb.simulations.inboundTransfers.create({ virtual_account_id: from.id, amount: 100_000, rail: 'rtp', originator: ORIGINATOR });
    await poll(() => sb.virtualAccounts.retrieve(from.id), (a) => a.balance.available === 100_000);
    assert.equal((await sb.virtualAccounts.close(closed.id)).status, 'closed');

    // An endpoint subscribed to book_transfer.completed alone, on a receiver of its own.
    const onlyBT: Delivery[] = [];
    const btReceiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        onlyBT.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((r) => btReceiver.listen(0, '127.0.0.1', r));
    ctx.after(async () => {
      btReceiver.closeAllConnections?.();
      await new Promise<void>((r) => btReceiver.close(() => r()));
    });
    const btEndpoint = await sb.webhooks.create({
      url: `http://127.0.0.1:${(btReceiver.address() as AddressInfo).port}/book-transfers`,
      events: ['book_transfer.completed'],
      description: `book transfers only ${RUN}`,
    });
    assert.deepEqual(btEndpoint.events, ['book_transfer.completed']);

    const tag = `bt-${RUN}`;
    const move = (amount: number, extra: { leg?: string; from?: string; to?: string } = {}) => ({
      from_virtual_account_id: extra.from ?? from.id,
      to_virtual_account_id: extra.to ?? to.id,
      amount,
      description: `book ${extra.leg ?? 'x'} ${RUN}`,
      metadata: { batch: tag, leg: extra.leg ?? 'x' },
    });
    const balances = async () =>
      Promise.all([from, to].map(async (a) => (await sb.virtualAccounts.retrieve(a.id)).balance)).then(([f, t]) => ({
        from: [f!.posted, f!.available],
        to: [t!.posted, t!.available],
      }));

    // No key given: the client generates one and sends it in the body and the header.
    const t1 = await sb.bookTransfers.create(move(30_000, { leg: 'one' }));
    assert.equal(t1.lastResponse.status, 201);
    assert.equal(t1.lastResponse.idempotentReplayed, false);
    assert.match(t1.id, /^bt_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(t1.object, 'book_transfer');
    assert.equal(t1.status, 'completed');
    assert.equal(t1.from_virtual_account_id, from.id);
    assert.equal(t1.to_virtual_account_id, to.id);
    assert.equal(t1.amount, 30_000);
    assert.equal(t1.currency, 'USD');
    assert.equal(t1.description, `book one ${RUN}`);
    assert.deepEqual(t1.metadata, { batch: tag, leg: 'one' });
    assert.equal(t1.environment, 'sandbox');
    assert.match(t1.lastResponse.idempotencyKey ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(t1.idempotency_key, t1.lastResponse.idempotencyKey, 'the generated key is the one the server kept');
    assert.match(t1.journal_entry_id, /^je_/);
    assert.match(t1.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    // Both balances moved at once (no waiting: the command's answer means it).
    assert.deepEqual(await balances(), { from: [70_000, 70_000], to: [30_000, 30_000] });

    const got = await sb.bookTransfers.retrieve(t1.id);
    assert.equal(got.lastResponse.status, 200);
    assert.deepEqual(got, t1);

    // Its journal entry, read back: posted, of type book_transfer, its source the transfer.
    const je = await sb.ledger.journalEntries.retrieve(t1.journal_entry_id);
    assert.equal(je.type, 'book_transfer');
    assert.equal(je.status, 'posted');
    assert.equal(je.description, t1.description);
    assert.deepEqual(je.source, { type: 'book_transfer', id: t1.id });
    assert.deepEqual(je.entries.map((e) => e.source), [je.source, je.source], 'each line names the transfer too');
    assert.deepEqual(
      je.entries.map((e) => [e.virtual_account_id, e.direction, e.amount, e.type, e.status]).sort(),
      [
        [from.id, 'debit', 30_000, 'book_transfer', 'posted'],
        [to.id, 'credit', 30_000, 'book_transfer', 'posted'],
      ].sort(),
    );

    // The same key and body (as after a lost answer): the same transfer, nothing moved twice.
    const replay = await sb.bookTransfers.create(move(30_000, { leg: 'one' }), { idempotencyKey: t1.idempotency_key });
    assert.equal(replay.lastResponse.status, 200);
    assert.equal(replay.lastResponse.idempotentReplayed, true);
    assert.deepEqual(replay, t1);
    const mark = statuses.length;
    const conflict = await expectError(
      sb.bookTransfers.create(move(30_001, { leg: 'one' }), { idempotencyKey: t1.idempotency_key }),
      ConflictError,
      'idempotency_conflict',
    );
    assert.equal(conflict.resourceId, t1.id);
    assert.deepEqual(answeredSince(mark), [409], 'idempotency_conflict is not retried');

    // Concurrent duplicates under one key (the body's): one transfer; the others replay it.
    const patient = newClient(sandboxKey, { maxRetries: 6 });
    const dupKey = `bt-dup-${RUN}`;
    const dups = await Promise.all(
      Array.from({ length: 6 }, () => patient.bookTransfers.create({ ...move(5_000, { leg: 'two' }), idempotency_key: dupKey })),
    );
    const t2 = dups.find((d) => d.lastResponse.status === 201)!;
    assert.ok(t2, `statuses: ${dups.map((d) => d.lastResponse.status)}`);
    assert.deepEqual(new Set(dups.map((d) => d.id)), new Set([t2.id]));
    assert.deepEqual(dups.map((d) => d.lastResponse.status).sort(), [200, 200, 200, 200, 200, 201]);
    assert.ok(dups.every((d) => d.lastResponse.idempotencyKey === dupKey && d.idempotency_key === dupKey));
    assert.deepEqual(await balances(), { from: [65_000, 65_000], to: [35_000, 35_000] });

    // 400: the same account on both sides.
    const same = await expectError(sb.bookTransfers.create(move(100, { to: from.id })), BadRequestError, 'invalid_request');
    assert.equal(same.param, 'to_virtual_account_id');
    // 404: an unknown account, another platform's, another environment's (the live key's view).
    await expectError(sb.bookTransfers.create(move(100, { to: 'va_00000000000000000000000000' })), NotFoundError, 'not_found');
    const other = await op.platforms.register({ name: `node client bt ${RUN}`, contact_email: 'ops@example.com' });
    const otherKey = (await op.platforms.approve(other.id)).sandbox_api_key.secret;
    const otherClient = newClient(otherKey);
    const foreign = await otherClient.virtualAccounts.create({ platform_id: other.id, entity_ref: `biz-bt-foreign-${RUN}`, type: 'checking' });
    await expectError(sb.bookTransfers.create(move(100, { to: foreign.id })), NotFoundError, 'not_found');
    await expectError(otherClient.bookTransfers.create(move(100, { from: foreign.id })), NotFoundError, 'not_found');
    await expectError(otherClient.bookTransfers.retrieve(t1.id), NotFoundError, 'not_found');
    assert.deepEqual(await otherClient.bookTransfers.list().toArray(), []);
    const live = newClient(liveKey);
    await expectError(live.bookTransfers.create(move(100)), NotFoundError, 'not_found');
    await expectError(live.bookTransfers.retrieve(t1.id), NotFoundError, 'not_found');
    await expectError(sb.bookTransfers.retrieve('bt_00000000000000000000000000'), NotFoundError, 'not_found');

    // 422, in the rules' order, each naming the account; a refused request takes no key.
    const shortKey = `bt-short-${RUN}`;
    const short = await expectError(
      sb.bookTransfers.create(move(65_001), { idempotencyKey: shortKey }),
      UnprocessableEntityError,
      'insufficient_funds',
    );
    assert.equal(short.resourceId, from.id);
    await sb.virtualAccounts.freeze(from.id);
    try {
      const frozen = await expectError(sb.bookTransfers.create(move(1_000_000_000)), UnprocessableEntityError, 'account_not_active');
      assert.equal(frozen.resourceId, from.id, 'a frozen sender is refused before its funds are looked at');
    } finally {
      await sb.virtualAccounts.unfreeze(from.id);
    }
    const noKYB = await expectError(
      sb.bookTransfers.create(move(100, { from: to.id, to: from.id })),
      UnprocessableEntityError,
      'kyb_not_approved',
    );
    assert.equal(noKYB.resourceId, to.id);
    const toClosed = await expectError(sb.bookTransfers.create(move(100, { to: closed.id })), UnprocessableEntityError, 'account_not_active');
    assert.equal(toClosed.resourceId, closed.id);
    assert.deepEqual(await balances(), { from: [65_000, 65_000], to: [35_000, 35_000] }, 'refusals moved nothing');

    // A frozen receiver still receives; the refused request's key is free for this one.
    await sb.virtualAccounts.freeze(to.id);
    let t3: BookTransfer;
    try {
      const made = await sb.bookTransfers.create(move(1_000, { leg: 'three' }), { idempotencyKey: shortKey });
      assert.equal(made.lastResponse.status, 201);
      assert.equal(made.idempotency_key, shortKey);
      assert.equal(made.to_virtual_account_id, to.id);
      t3 = made;
    } finally {
      await sb.virtualAccounts.unfreeze(to.id);
    }
    const t4 = await sb.bookTransfers.create({ ...move(2_000, { leg: 'four' }), description: undefined });
    assert.equal(t4.description, '', 'no description given: empty');
    assert.deepEqual(await balances(), { from: [62_000, 62_000], to: [38_000, 38_000] });
    assert.equal(
      (await sb.ledger.journalEntries.retrieve(t4.journal_entry_id)).description,
      `Book transfer to ${to.id}`,
      "the journal entry's default description",
    );

    // Lists: newest first, out of or into an account, by metadata and creation time, over pages.
    const ids = (xs: { id: string }[]) => xs.map((x) => x.id);
    const mine = [t4, t3, t2, t1];
    assert.deepEqual(ids(await sb.bookTransfers.list({ virtual_account_id: from.id }).toArray()), ids(mine), 'out of from');
    assert.deepEqual(ids(await sb.bookTransfers.list({ virtual_account_id: to.id }).toArray()), ids(mine), 'into to');
    assert.deepEqual(await sb.bookTransfers.list({ virtual_account_id: closed.id }).toArray(), []);
    assert.deepEqual(await sb.bookTransfers.list({ virtual_account_id: 'va_00000000000000000000000000' }).toArray(), []);
    const pages = [];
    for await (const page of sb.bookTransfers.list({ metadata: { batch: tag }, limit: 1 }).pages()) pages.push(page);
    assert.deepEqual(pages.map((p) => ids(p.data)), mine.map((t) => [t.id]), 'one per page, the filter kept on every page');
    assert.deepEqual(ids(await sb.bookTransfers.list({ metadata: { batch: tag, leg: 'two' } }).toArray()), [t2.id]);
    assert.deepEqual(await sb.bookTransfers.list({ metadata: { batch: tag, leg: 'five' } }).toArray(), []);
    const window = await sb.bookTransfers
      .list({ virtual_account_id: from.id, created_after: t2.created_at, created_before: t4.created_at })
      .toArray();
    assert.ok(t4.created_at > t2.created_at, `${t2.created_at} < ${t4.created_at}`);
    assert.deepEqual(ids(window), ids(mine.filter((t) => t.created_at >= t2.created_at && t.created_at < t4.created_at)));
    assert.ok(ids(window).includes(t2.id), 'created_after is inclusive');
    assert.ok(!ids(window).includes(t4.id), 'created_before is exclusive');
    const badLimit = await expectError(sb.bookTransfers.list({ limit: 101 }).firstPage(), BadRequestError, 'invalid_request');
    assert.equal(badLimit.param, 'limit');

    // Each account shows one posted book_transfer transaction per transfer, its source the transfer
    // (the ledger's views are written asynchronously: wait for them).
    for (const [account, sign] of [[from, -1], [to, 1]] as const) {
      const txns = await poll(
        () => sb.virtualAccounts.transactions.list(account.id, { type: 'book_transfer' }).toArray(),
        (list) => list.length >= mine.length,
      );
      assert.deepEqual(
        txns.map((t) => [t.type, t.status, t.amount, t.source]),
        mine.map((t) => ['book_transfer', 'posted', sign * t.amount, { type: 'book_transfer', id: t.id }]),
        account === from ? 'the sender' : 'the receiver',
      );
    }
    const ledgerLines = await sb.ledger.entries.list({ virtual_account_id: from.id, type: 'book_transfer' }).toArray();
    assert.deepEqual(
      ledgerLines.map((e) => [e.journal_entry_id, e.direction, e.source]),
      mine.map((t) => [t.journal_entry_id, 'debit', { type: 'book_transfer', id: t.id }]),
    );

    // The event book_transfer.completed, once per transfer, and its webhook delivery, signed.
    const events = await poll(
      () => sb.events.list({ type: 'book_transfer.completed', created_after: today }).toArray(),
      (list) => mine.every((t) => list.some((e) => (e.data.object as BookTransfer).id === t.id)),
    );
    assert.ok(events.every((e) => e.type === 'book_transfer.completed'));
    for (const t of mine) {
      const its = events.filter((e) => (e.data.object as BookTransfer).id === t.id);
      assert.equal(its.length, 1, `one event for ${t.id}`);
      assert.deepEqual(its[0]!.data.object, { ...t });
    }
    const delivered = await waitForDelivery((d) => eventOf(d).type === 'book_transfer.completed' && eventOf(d).data.object.id === t1.id);
    const event = Treasury.webhooks.verify(delivered.body, delivered.headers, webhook.secret);
    assert.equal(event.type, 'book_transfer.completed');
    assert.equal((event.data.object as BookTransfer).journal_entry_id, t1.journal_entry_id);

    // The filtered endpoint got exactly the four transfers' events, and lists them as its deliveries.
    const records = await poll(
      () => sb.webhooks.deliveries.list(btEndpoint.id, { status: 'succeeded' }).toArray(),
      (list) => list.length >= mine.length && onlyBT.length >= mine.length,
    );
    assert.deepEqual(records.map((d) => d.event_type), mine.map(() => 'book_transfer.completed'));
    const received = onlyBT.map((d) => Treasury.webhooks.verify(d.body, d.headers, btEndpoint.secret));
    assert.ok(received.every((e) => e.type === 'book_transfer.completed'), received.map((e) => e.type).join());
    assert.deepEqual(received.map((e) => (e.data.object as BookTransfer).id).sort(), ids(mine).sort());
    assert.deepEqual(new Set(records.map((d) => d.event_id)), new Set(received.map((e) => e.id)));
    await sb.webhooks.delete(btEndpoint.id);
  });

  test('payment approvals: held at the threshold, approved by a second key, denied, canceled; every refusal from the server', async (ctx) => {
    // An account of its own (KYB approved, funded with $10,000.00), so that its balances are this test's alone.
    const apr = await sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-apr-${RUN}`, type: 'checking' });
    const k = await sb.kyb.create(kybBody(apr.id, `Approvals Co ${RUN}`, '12-3450003'));
    assert.equal((await poll(() => sb.kyb.retrieve(k.id), (x) => x.status !== 'pending')).status, 'approved');
    await sb.simulations.inboundTransfers.create({ virtual_account_id: apr.id, amount: 1_000_000, rail: 'rtp', originator: ORIGINATOR });
    await poll(() => sb.virtualAccounts.retrieve(apr.id), (a) => a.balance.available === 1_000_000);

    // Two more keys of the platform: the maker creates the payments, the checker approves them.
    const [maker, checker] = await Promise.all([
      sb.platform.apiKeys.create({ name: `maker ${RUN}` }),
      sb.platform.apiKeys.create({ name: `checker ${RUN}` }),
    ]);
    const mk = newClient(maker.secret);
    const ck = newClient(checker.secret);
    // Another platform's key, and this platform's live key: neither sees the payments.
    const other = await op.platforms.register({ name: `node client apr ${RUN}`, contact_email: 'ops@example.com' });
    const foreign = newClient((await op.platforms.approve(other.id)).sandbox_api_key.secret);
    const live = newClient(liveKey);

    // An endpoint subscribed to the three approval events alone, on a receiver of its own.
    const onlyApprovals: Delivery[] = [];
    const aprReceiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        onlyApprovals.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((r) => aprReceiver.listen(0, '127.0.0.1', r));
    ctx.after(async () => {
      aprReceiver.closeAllConnections?.();
      await new Promise<void>((r) => aprReceiver.close(() => r()));
    });
    const approvalEvents = ['payment.requires_approval', 'payment.approved', 'payment.denied'] as const;
    const aprEndpoint = await sb.webhooks.create({
      url: `http://127.0.0.1:${(aprReceiver.address() as AddressInfo).port}/approvals`,
      events: [...approvalEvents],
      description: `approvals only ${RUN}`,
    });
    assert.deepEqual(aprEndpoint.events, [...approvalEvents]);

    const pay = (client: Treasury, rail: Payment['rail'], amount: number, leg: string) =>
      client.payments.create({
        virtual_account_id: apr.id,
        amount,
        rail,
        destination: DEST,
        description: `approval ${leg} ${RUN}`,
        metadata: { run: RUN, leg },
      });
    const balance = async () => {
      const b = (await sb.virtualAccounts.retrieve(apr.id)).balance;
      return { posted: b.posted, available: b.available };
    };
    /** The account's transactions of one payment, once the (asynchronous) views show them in `status`. */
    const txnsOf = (p: Payment, status: 'pending' | 'posted' | 'void') =>
      poll(
        async () => (await sb.virtualAccounts.transactions.list(apr.id).toArray()).filter((t) => t.source.id === p.id),
        (list) => list.length === 2 && list.every((t) => t.status === status),
      ).then((list) => list.map((t) => [t.type, t.amount, t.status]).sort());
    const assertHeld = (p: WithResponse<Payment>, createdBy: string) => {
      assert.equal(p.lastResponse.status, 201);
      assert.equal(p.status, 'requires_approval');
      assert.deepEqual(p.approval, {
        created_by: createdBy,
        expires_at: new Date(Date.parse(p.created_at) + 7 * 86_400_000).toISOString(),
        approved_at: null,
        approved_by: null,
        denied_at: null,
        denied_by: null,
        denial_reason: null,
      });
      assert.ok(!('cancellation_reason' in p), 'no cancellation_reason unless canceled by expiry');
      assert.match(p.journal_entry_id ?? 'null', /^je_/, 'held by a journal entry from its creation');
    };
    /** The payment's journal entry: its source the payment, it and its lines in `status`. */
    const entryOf = async (p: Payment, status: JournalEntry['status']) => {
      const je = await sb.ledger.journalEntries.retrieve(p.journal_entry_id!);
      const source = { type: 'payment', id: p.id };
      assert.deepEqual(je.source, source);
      assert.equal(je.status, status);
      assert.deepEqual(
        je.entries.map((e) => [e.status, e.source]),
        je.entries.map(() => [status, source]),
      );
      return je;
    };

    const threshold = 50_000;
    const set = await sb.platform.settings.update({ payment_approval_threshold: threshold });
    assert.equal(set.payment_approval_threshold, threshold);
    let waiting: Payment; // created while the threshold was set, still waiting once it is removed
    const held: Payment[] = []; // every payment created requires_approval, in order
    const decided = { approved: [] as Payment[], denied: [] as Payment[] };
    let expected = await balance();
    assert.deepEqual(expected, { posted: 1_000_000, available: 1_000_000 });
    try {
      // Below the threshold: an ordinary payment, without `approval`; it settles as usual.
      const below = await pay(mk, 'rtp', threshold - 1, 'below');
      assert.ok(['pending', 'submitted', 'completed'].includes(below.status), below.status);
      assert.ok(!('approval' in below), 'approval is absent, not null, on a payment that needed none');
      assert.equal((await poll(() => sb.payments.retrieve(below.id), (x) => x.status === 'completed')).status, 'completed');
      expected = { posted: expected.posted - below.amount - below.fee, available: expected.available - below.amount - below.fee };
      assert.deepEqual(await balance(), expected);

      // At the threshold: created requires_approval (201), held (amount + fee leave `available`), never sent.
      const p1 = await pay(mk, 'rtp', threshold, 'approved');
      held.push(p1);
      assertHeld(p1, maker.id);
      await entryOf(p1, 'pending');
      assert.equal(p1.lastResponse.idempotencyKey, p1.idempotency_key);
      expected.available -= p1.amount + p1.fee;
      assert.deepEqual(await balance(), expected, 'held: available falls, posted does not');
      assert.deepEqual(await txnsOf(p1, 'pending'), [['payment', -p1.amount, 'pending'], ['payment_fee', -p1.fee, 'pending']].sort());
      // The sandbox settles an RTP payment within a second, but not this one; nor will it complete or fail it by hand.
      await sleep(1_500);
      const still = await sb.payments.retrieve(p1.id);
      assert.equal(still.status, 'requires_approval');
      assert.equal(still.submitted_at, null);
      await expectError(sb.simulations.payments.complete(p1.id), ConflictError, 'invalid_state');
      await expectError(sb.simulations.payments.fail(p1.id, { network_code: 'AC03' }), ConflictError, 'invalid_state');
      const listed = await sb.payments.list({ virtual_account_id: apr.id, status: 'requires_approval' }).toArray();
      assert.deepEqual(listed.map((p) => p.id), [p1.id]);
      assert.deepEqual(listed[0]!.approval, p1.approval);

      // Not the key that created it (403), nor the operator's (403); unknown, another platform's or
      // the other environment's: 404. None changes it.
      const mark = statuses.length;
      const selfApproval = await expectError(mk.payments.approve(p1.id), PermissionDeniedError, 'forbidden');
      assert.equal(selfApproval.status, 403);
      assert.deepEqual(answeredSince(mark), [403], 'a 403 is not retried');
      await expectError(op.payments.approve(p1.id), PermissionDeniedError, 'forbidden');
      await expectError(op.payments.deny(p1.id), PermissionDeniedError, 'forbidden');
      for (const stranger of [foreign, live]) {
        await expectError(stranger.payments.approve(p1.id), NotFoundError, 'not_found');
        await expectError(stranger.payments.deny(p1.id, { reason: 'not mine' }), NotFoundError, 'not_found');
      }
      await expectError(ck.payments.approve('pay_0000000000000000000000000a'), NotFoundError, 'not_found');
      await expectError(ck.payments.deny('pay_0000000000000000000000000a'), NotFoundError, 'not_found');
      // A reason over 500 characters: 400, nothing denied.
      const tooLong = await expectError(ck.payments.deny(p1.id, { reason: 'x'.repeat(501) }), BadRequestError, 'invalid_request');
      assert.equal(tooLong.param, 'reason');
      const untouched = await sb.payments.retrieve(p1.id);
      assert.equal(untouched.status, 'requires_approval');
      assert.deepEqual(untouched.approval, p1.approval);

      // Another key approves: pending, released to its rail, settling from now; then it completes.
      const approved = await ck.payments.approve(p1.id);
      assert.equal(approved.lastResponse.status, 200);
      assert.ok(['pending', 'submitted', 'completed'].includes(approved.status), approved.status);
      assert.equal(approved.approval?.created_by, maker.id);
      assert.equal(approved.approval?.approved_by, checker.id);
      assert.match(approved.approval?.approved_at ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.ok(approved.approval!.approved_at! >= p1.created_at);
      assert.equal(approved.approval?.denied_at, null);
      assert.equal(approved.approval?.denied_by, null);
      assert.equal(approved.expected_settlement_at, approved.approval?.approved_at, 'an RTP payment settles from its approval');
      const p1Done = await poll(() => sb.payments.retrieve(p1.id), (x) => ['completed', 'failed'].includes(x.status), 10_000);
      assert.equal(p1Done.status, 'completed', JSON.stringify(p1Done.failure));
      assert.deepEqual(p1Done.approval, approved.approval, 'the approval stays on the payment');
      decided.approved.push(p1Done);
      expected.posted -= p1.amount + p1.fee;
      assert.deepEqual(await balance(), expected);
      // Only a payment in requires_approval can be approved or denied; a completed one is not cancelable.
      await expectError(ck.payments.approve(p1.id), ConflictError, 'invalid_state');
      await expectError(ck.payments.deny(p1.id), ConflictError, 'invalid_state');
      await expectError(sb.payments.cancel(p1.id), ConflictError, 'payment_not_cancelable');

      // The creating key may deny (to withdraw it): denied, final, the hold released. A reason of 500
      // characters (1,000 bytes of UTF-8) is kept whole.
      const p2 = await pay(mk, 'fednow', 60_000, 'denied-by-maker');
      held.push(p2);
      assertHeld(p2, maker.id);
      assert.deepEqual(await balance(), { ...expected, available: expected.available - p2.amount - p2.fee });
      const reason = 'é'.repeat(499) + '!';
      const denied = await mk.payments.deny(p2.id, { reason });
      assert.equal(denied.lastResponse.status, 200);
      assert.equal(denied.status, 'denied');
      assert.equal(denied.approval?.denied_by, maker.id);
      assert.equal(denied.approval?.denial_reason, reason);
      assert.match(denied.approval?.denied_at ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.equal(denied.approval?.approved_at, null);
      assert.equal(denied.approval?.approved_by, null);
      assert.ok(!('cancellation_reason' in denied));
      assert.deepEqual(await balance(), expected, 'the hold is released');
      assert.deepEqual(await txnsOf(p2, 'void'), [['payment', -p2.amount, 'void'], ['payment_fee', -p2.fee, 'void']].sort());
      decided.denied.push(denied);
      assert.equal(denied.journal_entry_id, p2.journal_entry_id);
      await entryOf(p2, 'archived');
      await expectError(ck.payments.approve(p2.id), ConflictError, 'invalid_state');
      await expectError(ck.payments.deny(p2.id, { reason: 'again' }), ConflictError, 'invalid_state');
      await expectError(sb.payments.cancel(p2.id), ConflictError, 'payment_not_cancelable');

      // Another key denies without a reason: denial_reason null.
      const p3 = await pay(mk, 'ach_same_day', 70_000, 'denied-by-checker');
      held.push(p3);
      assertHeld(p3, maker.id);
      const denied3 = await ck.payments.deny(p3.id);
      assert.equal(denied3.status, 'denied');
      assert.equal(denied3.approval?.denied_by, checker.id);
      assert.equal(denied3.approval?.denial_reason, null);
      decided.denied.push(denied3);
      assert.deepEqual(await balance(), expected);

      // Canceled while it waits: canceled, the hold released; it can then be neither approved nor denied.
      const p4 = await pay(sb, 'rtp', 80_000, 'canceled');
      held.push(p4);
      assert.equal(p4.status, 'requires_approval');
      assert.match(p4.approval?.created_by ?? '', /^key_[0-9a-hjkmnp-tv-z]{26}$/);
      assert.notEqual(p4.approval?.created_by, maker.id);
      const canceled = await sb.payments.cancel(p4.id);
      assert.equal(canceled.status, 'canceled');
      assert.ok(canceled.canceled_at);
      assert.ok(!('cancellation_reason' in canceled), 'canceled by the platform: no cancellation_reason');
      assert.deepEqual(canceled.approval, p4.approval, 'undecided');
      assert.deepEqual(await balance(), expected);
      assert.deepEqual(await txnsOf(p4, 'void'), [['payment', -p4.amount, 'void'], ['payment_fee', -p4.fee, 'void']].sort());
      await entryOf(p4, 'archived');
      await expectError(ck.payments.approve(p4.id), ConflictError, 'invalid_state');
      await expectError(ck.payments.deny(p4.id), ConflictError, 'invalid_state');

      // An ACH payment approved by the platform's first key settles counting from its approval
      // (the sandbox's same-day delay, 1 s here), not from its creation.
      const p5 = await pay(mk, 'ach_same_day', 55_000, 'approved-ach');
      held.push(p5);
      assertHeld(p5, maker.id);
      await sleep(1_200); // past the delay counted from creation: still waiting
      assert.equal((await sb.payments.retrieve(p5.id)).status, 'requires_approval');
      const approved5 = await sb.payments.approve(p5.id);
      assert.notEqual(approved5.approval?.approved_by, maker.id);
      assert.equal(approved5.approval?.approved_by, p4.approval?.created_by, "the journey's sandbox key");
      assert.equal(
        Date.parse(approved5.expected_settlement_at) - Date.parse(approved5.approval!.approved_at!),
        1_000,
        `${approved5.expected_settlement_at} is 1 s after ${approved5.approval?.approved_at}`,
      );
      const p5Done = await poll(() => sb.payments.retrieve(p5.id), (x) => ['completed', 'failed'].includes(x.status), 15_000);
      assert.equal(p5Done.status, 'completed', JSON.stringify(p5Done.failure));
      assert.ok(p5Done.completed_at! >= p5Done.expected_settlement_at);
      decided.approved.push(p5Done);
      expected = { posted: expected.posted - p5.amount - p5.fee, available: expected.available - p5.amount - p5.fee };
      assert.deepEqual(await balance(), expected);

      // Lists filter on the new statuses.
      const deniedList = await sb.payments.list({ virtual_account_id: apr.id, status: 'denied' }).toArray();
      assert.deepEqual(deniedList.map((p) => p.id), [p3.id, p2.id]);
      assert.ok(deniedList.every((p) => p.approval?.denied_at));

      const p6 = await pay(mk, 'rtp', 90_000, 'waiting');
      held.push(p6);
      assertHeld(p6, maker.id);
      waiting = p6;
    } finally {
      const cleared = await sb.platform.settings.update({ payment_approval_threshold: null });
      assert.equal(cleared.payment_approval_threshold, null);
    }
    // Without a threshold, a large payment goes straight to its rail; one created before keeps waiting.
    assert.equal((await sb.platform.settings.retrieve()).payment_approval_threshold, null);
    const unheld = await pay(mk, 'rtp', 90_000, 'unheld');
    assert.notEqual(unheld.status, 'requires_approval');
    assert.ok(!('approval' in unheld));
    assert.equal((await sb.payments.retrieve(waiting.id)).status, 'requires_approval');
    assert.equal((await sb.payments.cancel(waiting.id)).status, 'canceled');
    assert.deepEqual(await sb.payments.list({ virtual_account_id: apr.id, status: 'requires_approval' }).toArray(), []);

    // The events, once per payment, each carrying the payment as it was at that event.
    const ids = (xs: { id: string }[]) => xs.map((x) => x.id).sort();
    const eventsOf = async (type: (typeof approvalEvents)[number], want: Payment[]) => {
      const list = await poll(
        () => sb.events.list({ type, created_after: today }).toArray(),
        (l) => want.every((p) => l.some((e) => (e.data.object as Payment).id === p.id)),
      );
      assert.ok(list.every((e) => e.type === type));
      const mine = list.filter((e) => (e.data.object as Payment).virtual_account_id === apr.id);
      assert.deepEqual(ids(mine.map((e) => e.data.object as Payment)), ids(want), type);
      return mine.map((e) => e.data.object as Payment);
    };
    // payment.created of a held payment shows it held, with its approval: it never stood pending.
    const createdEvents = await poll(
      () => sb.events.list({ type: 'payment.created', created_after: today }).toArray(),
      (l) => held.every((p) => l.some((e) => (e.data.object as Payment).id === p.id)),
    );
    for (const p of held) {
      const its = createdEvents.filter((e) => (e.data.object as Payment).id === p.id);
      assert.equal(its.length, 1, `one payment.created for ${p.id}`);
      const shown = its[0]!.data.object as Payment;
      assert.equal(shown.status, 'requires_approval', `${p.id}: payment.created`);
      assert.deepEqual(shown.approval, p.approval, `${p.id}: payment.created shows the undecided approval`);
      assert.equal(shown.journal_entry_id, p.journal_entry_id);
    }
    for (const p of await eventsOf('payment.requires_approval', held)) {
      assert.equal(p.status, 'requires_approval');
      assert.equal(p.approval?.approved_at, null);
      assert.equal(p.approval?.denied_at, null);
    }
    for (const p of await eventsOf('payment.approved', decided.approved)) {
      assert.equal(p.status, 'pending');
      assert.deepEqual(p.approval, decided.approved.find((x) => x.id === p.id)!.approval);
    }
    for (const p of await eventsOf('payment.denied', decided.denied)) {
      assert.equal(p.status, 'denied');
      assert.deepEqual(p.approval, decided.denied.find((x) => x.id === p.id)!.approval);
    }

    // The subscribed endpoint got exactly those events, signed, and lists them as its deliveries.
    const want = held.length + decided.approved.length + decided.denied.length;
    const records = await poll(
      () => sb.webhooks.deliveries.list(aprEndpoint.id, { status: 'succeeded' }).toArray(),
      (list) => list.length >= want && onlyApprovals.length >= want,
    );
    assert.equal(records.length, want);
    const received = onlyApprovals.map((d) => Treasury.webhooks.verify(d.body, d.headers, aprEndpoint.secret));
    const count = (types: string[]) => Object.fromEntries(approvalEvents.map((t) => [t, types.filter((x) => x === t).length]));
    const wantCounts = { 'payment.requires_approval': held.length, 'payment.approved': decided.approved.length, 'payment.denied': decided.denied.length };
    assert.deepEqual(count(received.map((e) => e.type)), wantCounts);
    assert.deepEqual(count(records.map((d) => d.event_type)), wantCounts);
    assert.deepEqual(new Set(records.map((d) => d.event_id)), new Set(received.map((e) => e.id)));
    await sb.webhooks.delete(aprEndpoint.id);
  });

  test('scheduled payments: nothing held until released, listed, bad dates refused, released by the simulation, canceled, failed without funds; the event', async (ctx) => {
    // An account of its own (KYB approved, funded with $1,000.00), so that its balances are this test's alone.
    const sch = await sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-sch-${RUN}`, type: 'checking' });
    const k = await sb.kyb.create(kybBody(sch.id, `Scheduled Co ${RUN}`, '12-3450004'));
    assert.equal((await poll(() => sb.kyb.retrieve(k.id), (x) => x.status !== 'pending')).status, 'approved');
    await sb.simulations.inboundTransfers.create({ virtual_account_id: sch.id, amount: 100_000, rail: 'rtp', originator: ORIGINATOR });
    await poll(() => sb.virtualAccounts.retrieve(sch.id), (a) => a.balance.available === 100_000);
    // Another platform's key: it cannot release this platform's payments.
    const other = await op.platforms.register({ name: `node client sch ${RUN}`, contact_email: 'ops@example.com' });
    const foreign = newClient((await op.platforms.approve(other.id)).sandbox_api_key.secret);

    // An endpoint subscribed to payment.released alone, on a receiver of its own.
    const onlyReleased: Delivery[] = [];
    const schReceiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        onlyReleased.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((r) => schReceiver.listen(0, '127.0.0.1', r));
    ctx.after(async () => {
      schReceiver.closeAllConnections?.();
      await new Promise<void>((r) => schReceiver.close(() => r()));
    });
    const schEndpoint = await sb.webhooks.create({
      url: `http://127.0.0.1:${(schReceiver.address() as AddressInfo).port}/scheduled`,
      events: ['payment.released'],
      description: `scheduled payments only ${RUN}`,
    });
    assert.deepEqual(schEndpoint.events, ['payment.released']);

    /** The Eastern date `days` from today (Eastern), as `YYYY-MM-DD`: what the server counts from. */
    const easternDate = (days: number) => {
      const todayET = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/New_York' }).format(new Date());
      const d = new Date(`${todayET}T00:00:00Z`);
      d.setUTCDate(d.getUTCDate() + days);
      return d.toISOString().slice(0, 10);
    };
    const schedule = (amount: number, rail: Payment['rail'], leg: string, scheduled_for = easternDate(1)) =>
      sb.payments.create({
        virtual_account_id: sch.id,
        amount,
        rail,
        destination: DEST,
        description: `scheduled ${leg} ${RUN}`,
        metadata: { run: RUN, leg },
        scheduled_for,
      });
    const balance = async () => {
      const b = (await sb.virtualAccounts.retrieve(sch.id)).balance;
      return { posted: b.posted, available: b.available };
    };
    const assertScheduled = (p: WithResponse<Payment>, date: string) => {
      assert.equal(p.lastResponse.status, 201);
      assert.equal(p.status, 'scheduled');
      assert.equal(p.scheduled_for, date);
      assert.equal(p.journal_entry_id, null, 'nothing held: no journal entry yet');
      assert.equal(p.submitted_at, null);
      assert.equal(p.failure, null);
      assert.ok(!('approval' in p));
      assert.ok(!('cancellation_reason' in p));
    };
    let expected = await balance();
    assert.deepEqual(expected, { posted: 100_000, available: 100_000 });
    // A payment that was not scheduled has no scheduled_for at all.
    assert.ok(completed.length > 0 && completed.every((p) => !('scheduled_for' in p)));

    // Scheduled for tomorrow (Eastern): 201 `scheduled`, nothing held, no journal entry, no transaction.
    const tomorrowET = easternDate(1);
    const p1 = await schedule(30_000, 'ach_standard', 'released');
    assertScheduled(p1, tomorrowET);
    assert.match(p1.id, /^pay_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(p1.lastResponse.idempotencyKey, p1.idempotency_key);
    assert.deepEqual(await balance(), expected, 'a scheduled payment moves no balance');
    // No rail sees it (the sandbox's ACH takes a payment 1 s after creation, but not this one), nor
    // will the simulations complete or fail it.
    await sleep(1_500);
    const still = await sb.payments.retrieve(p1.id);
    assert.equal(still.status, 'scheduled');
    assert.equal(still.journal_entry_id, null);
    assert.equal(still.scheduled_for, tomorrowET);
    await expectError(sb.simulations.payments.complete(p1.id), ConflictError, 'invalid_state');
    await expectError(sb.simulations.payments.fail(p1.id, { network_code: 'R01' }), ConflictError, 'invalid_state');
    assert.deepEqual(
      (await sb.virtualAccounts.transactions.list(sch.id).toArray()).filter((t) => t.source.id === p1.id),
      [],
      'no transaction until it is released',
    );
    assert.deepEqual(await balance(), expected);

    // The date: after today (Eastern) and at most 365 days ahead; else 400, param scheduled_for, not retried.
    for (const date of [easternDate(0), easternDate(-1), easternDate(366), '2026-02-30', 'tomorrow', `${tomorrowET}T06:00:00Z`]) {
      const mark = statuses.length;
      const e = await expectError(schedule(10_000, 'rtp', 'bad-date', date), BadRequestError, 'invalid_request');
      assert.equal(e.param, 'scheduled_for', date);
      assert.deepEqual(answeredSince(mark), [400], 'a 400 is not retried');
    }
    const p2 = await schedule(20_000, 'ach_same_day', 'canceled', easternDate(365));
    assertScheduled(p2, easternDate(365));
    assert.deepEqual(await balance(), expected, 'refused dates and the second schedule moved nothing');

    // Lists filter on the status `scheduled`, newest first.
    const listed = await sb.payments.list({ virtual_account_id: sch.id, status: 'scheduled' }).toArray();
    assert.deepEqual(listed.map((p) => p.id), [p2.id, p1.id]);
    assert.deepEqual(listed.map((p) => p.scheduled_for), [p2.scheduled_for, tomorrowET]);
    assert.ok(listed.every((p) => p.status === 'scheduled' && p.journal_entry_id === null));

    // Another platform's key, an unknown id: 404; the operator key: 403. None releases it.
    await expectError(foreign.simulations.payments.release(p1.id), NotFoundError, 'not_found');
    await expectError(sb.simulations.payments.release('pay_0000000000000000000000000a'), NotFoundError, 'not_found');
    await expectError(op.simulations.payments.release(p1.id), PermissionDeniedError);
    assert.equal((await sb.payments.retrieve(p1.id)).status, 'scheduled');

    // Released by the simulation, as its date would: held now (amount + fee leave `available`),
    // `pending`, its journal entry recorded; `scheduled_for` stays.
    const released = await sb.simulations.payments.release(p1.id);
    assert.equal(released.lastResponse.status, 200);
    assert.equal(released.id, p1.id);
    assert.equal(released.status, 'pending');
    assert.equal(released.scheduled_for, tomorrowET);
    assert.match(released.journal_entry_id ?? 'null', /^je_/, 'held by a journal entry from its release');
    assert.equal(released.failure, null);
    expected.available -= released.amount + released.fee;
    assert.deepEqual(await balance(), expected, 'held: available falls, posted does not');
    const je = await sb.ledger.journalEntries.retrieve(released.journal_entry_id!);
    assert.deepEqual(je.source, { type: 'payment', id: p1.id });
    assert.ok(['pending', 'posted'].includes(je.status), je.status);
    // A payment is released once: again, 409 invalid_state, not retried.
    const mark = statuses.length;
    await expectError(sb.simulations.payments.release(p1.id), ConflictError, 'invalid_state');
    assert.deepEqual(answeredSince(mark), [409], 'invalid_state is not retried');
    // From then on the sandbox's rail takes it as any new payment: it completes and posts.
    const done = await poll(() => sb.payments.retrieve(p1.id), (x) => ['completed', 'failed'].includes(x.status), 15_000);
    assert.equal(done.status, 'completed', JSON.stringify(done.failure));
    assert.equal(done.journal_entry_id, released.journal_entry_id);
    assert.equal(done.scheduled_for, tomorrowET);
    assert.equal((await sb.ledger.journalEntries.retrieve(done.journal_entry_id!)).status, 'posted');
    expected.posted -= released.amount + released.fee;
    assert.deepEqual(await balance(), expected);

    // Canceled while scheduled: canceled, nothing to release, nothing held; then neither releasable nor cancelable.
    const canceled = await sb.payments.cancel(p2.id);
    assert.equal(canceled.status, 'canceled');
    assert.ok(canceled.canceled_at);
    assert.equal(canceled.journal_entry_id, null);
    assert.equal(canceled.scheduled_for, p2.scheduled_for);
    assert.ok(!('cancellation_reason' in canceled));
    await expectError(sb.simulations.payments.release(p2.id), ConflictError, 'invalid_state');
    await expectError(sb.payments.cancel(p2.id), ConflictError, 'payment_not_cancelable');
    assert.deepEqual(await balance(), expected);

    // Released without the funds: `failed` with the rule's code and no network code; nothing held, no entry.
    const p3 = await schedule(expected.available, 'ach_same_day', 'no-funds');
    assertScheduled(p3, tomorrowET);
    const failed = await sb.simulations.payments.release(p3.id);
    assert.equal(failed.lastResponse.status, 200);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure?.code, 'insufficient_funds');
    assert.equal(failed.failure?.network_code, null);
    assert.ok(failed.failure?.reason);
    assert.equal(failed.failure?.retry_recommendation.action, 'retry_later');
    assert.equal(failed.journal_entry_id, null, 'it never held anything');
    assert.ok(failed.failed_at);
    assert.equal(failed.scheduled_for, tomorrowET);
    const again = await sb.payments.retrieve(p3.id);
    assert.equal(again.status, 'failed');
    assert.deepEqual(again.failure, failed.failure);
    await expectError(sb.simulations.payments.release(p3.id), ConflictError, 'invalid_state');
    assert.deepEqual(await balance(), expected, 'nothing moved');
    assert.deepEqual(await sb.payments.list({ virtual_account_id: sch.id, status: 'scheduled' }).toArray(), []);

    // The events: payment.created shows each scheduled, payment.released the released one pending
    // (held), payment.failed the refused one with its rule's code.
    const eventsOf = async (type: 'payment.created' | 'payment.released' | 'payment.failed', want: Payment[]) => {
      const list = await poll(
        () => sb.events.list({ type, created_after: today }).toArray(),
        (l) => want.every((p) => l.some((e) => (e.data.object as Payment).id === p.id)),
      );
      assert.ok(list.every((e) => e.type === type));
      const mine = list.filter((e) => (e.data.object as Payment).virtual_account_id === sch.id).map((e) => e.data.object as Payment);
      assert.deepEqual(mine.map((p) => p.id).sort(), want.map((p) => p.id).sort(), type);
      return mine;
    };
    for (const p of await eventsOf('payment.created', [p1, p2, p3])) {
      assert.equal(p.status, 'scheduled');
      assert.equal(p.journal_entry_id, null);
    }
    const [releasedEvent] = await eventsOf('payment.released', [p1]);
    assert.equal(releasedEvent!.status, 'pending');
    assert.equal(releasedEvent!.journal_entry_id, released.journal_entry_id);
    assert.equal(releasedEvent!.scheduled_for, tomorrowET);
    const [failedEvent] = await eventsOf('payment.failed', [p3]);
    assert.equal(failedEvent!.failure?.code, 'insufficient_funds');
    assert.equal(failedEvent!.failure?.network_code, null);

    // The subscribed endpoint got exactly the one payment.released, signed, and lists it as its delivery.
    const records = await poll(
      () => sb.webhooks.deliveries.list(schEndpoint.id, { status: 'succeeded' }).toArray(),
      (list) => list.length >= 1 && onlyReleased.length >= 1,
    );
    await sleep(500); // nothing more arrives
    assert.equal(records.length, 1);
    assert.equal(onlyReleased.length, 1);
    const event = Treasury.webhooks.verify(onlyReleased[0]!.body, onlyReleased[0]!.headers, schEndpoint.secret);
    assert.equal(event.type, 'payment.released');
    assert.equal(records[0]!.event_type, 'payment.released');
    assert.equal(records[0]!.event_id, event.id);
    assert.equal((event.data.object as Payment).id, p1.id);
    await sb.webhooks.delete(schEndpoint.id);
  });

  test('webhooks: deliveries verified by the helper, a tampered one refused, test, retry, rotation, delete', async () => {
    // The journey's events arrived, each signed: all verify.
    const paymentDone = await waitForDelivery((d) => eventOf(d).type === 'payment.completed');
    assert.equal(Treasury.webhooks.verify(paymentDone.body, paymentDone.headers, webhook.secret).type, 'payment.completed');
    for (const d of deliveries.filter((x) => x.path === new URL(receiverURL).pathname)) {
      const event = Treasury.webhooks.verify(d.body, d.headers, webhook.secret);
      assert.equal(event.object, 'event');
    }
    // Tampered body, or a signature of another secret: refused.
    const tampered = paymentDone.body.replace('"payment.completed"', '"payment.failed"');
    assert.notEqual(tampered, paymentDone.body);
    assert.throws(() => Treasury.webhooks.verify(tampered, paymentDone.headers, webhook.secret), WebhookVerificationError);
    assert.throws(
      () => sb.webhooks.verify(paymentDone.body, paymentDone.headers, 'whsec_' + randomBytes(24).toString('base64')),
      WebhookVerificationError,
    );
    assert.throws(
      () => Treasury.webhooks.verify(paymentDone.body, { ...paymentDone.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 600) }, webhook.secret),
      WebhookVerificationError,
    );

    assert.equal((await sb.webhooks.retrieve(webhook.id)).url, receiverURL);
    const all = await sb.webhooks.list().toArray();
    assert.ok(all.some((w) => w.id === webhook.id));
    const updated = await sb.webhooks.update(webhook.id, { description: `updated ${RUN}` });
    assert.equal(updated.description, `updated ${RUN}`);

    const queued = await sb.webhooks.test(webhook.id);
    assert.equal(queued.status, 'pending');
    assert.equal(queued.lastResponse.status, 202);
    const testDelivery = await waitForDelivery((d) => d.headers['webhook-id'] === queued.id);
    assert.equal(Treasury.webhooks.verify(testDelivery.body, testDelivery.headers, webhook.secret).type, 'webhook.test');

    const succeeded = await poll(
      () => sb.webhooks.deliveries.list(webhook.id, { status: 'succeeded', limit: 2 }).toArray(),
      (list) => list.some((d) => d.id === queued.id),
    );
    const record = succeeded.find((d) => d.id === queued.id)!;
    assert.equal(record.attempts[0]?.status_code, 200);

    // A retry is a new attempt of the same delivery: the same webhook-id again.
    const countBefore = deliveries.filter((d) => d.headers['webhook-id'] === queued.id).length;
    const retried = await sb.webhooks.deliveries.retry(webhook.id, queued.id);
    assert.equal(retried.id, queued.id);
    await poll(
      async () => deliveries.filter((d) => d.headers['webhook-id'] === queued.id).length,
      (n) => n > countBefore,
      10_000,
      50,
    );

    // After a rotation, deliveries carry both signatures for a while: either secret verifies.
    const rotated = await sb.webhooks.rotateSecret(webhook.id);
    assert.notEqual(rotated.secret, webhook.secret);
    const afterRotation = await sb.webhooks.test(webhook.id);
    const signedTwice = await waitForDelivery((d) => d.headers['webhook-id'] === afterRotation.id);
    assert.ok(String(signedTwice.headers['webhook-signature']).split(' ').length >= 2);
    Treasury.webhooks.verify(signedTwice.body, signedTwice.headers, rotated.secret);
    Treasury.webhooks.verify(signedTwice.body, signedTwice.headers, webhook.secret);

    const deleted = await sb.webhooks.delete(webhook.id);
    assert.equal(deleted.deleted, true);
    await expectError(sb.webhooks.retrieve(webhook.id), NotFoundError, 'not_found');
  });

  test('the revenue share report', async () => {
    const report = await sb.platform.revenueShare({ from: today, to: tomorrow });
    assert.equal(report.object, 'revenue_share_report');
    assert.equal(report.share_rate, '0.30');
    const rtp = report.lines.find((l) => l.source === 'payment_fees' && l.rail === 'rtp');
    assert.ok(rtp && rtp.gross_amount >= 40, JSON.stringify(report.lines));
  });

  test('the operator lists and cuts live ACH files', async () => {
    const files = await op.operator.achFiles.list({ limit: 2 }).firstPage();
    assert.equal(files.object, 'list');
    try {
      const cut = await op.operator.achFiles.cut();
      assert.equal(cut.object, 'list');
      assert.equal(cut.has_more, false);
    } catch (e) {
      // A server without TREASURY_ACH_OUTBOX says so with 409 invalid_state.
      assert.ok(e instanceof ConflictError && e.code === 'invalid_state', String(e));
    }
  });

  test('webhook replay: a window of past events sent again, with and without types, signed, listed by replay_id; idempotent; every refusal from the server', async () => {
    // An endpoint of its own on the journey's receiver (its own path), subscribed to virtual_account.created alone.
    const replayPath = '/hooks/replay';
    const endpoint = await sb.webhooks.create({
      url: new URL(replayPath, receiverURL).toString(),
      events: ['virtual_account.created'],
      description: `replay ${RUN}`,
      retry_policy: { max_attempts: 3, initial_delay_seconds: 1, max_delay_seconds: 2 },
    });
    const received = () => deliveries.filter((d) => d.path === replayPath);
    // Another platform: it cannot replay to this platform's endpoint.
    const other = await op.platforms.register({ name: `node client replay ${RUN}`, contact_email: 'ops@example.com' });
    const foreign = newClient((await op.platforms.approve(other.id)).sandbox_api_key.secret);

    // Some events: three accounts (virtual_account.created), and two manual entries on va1 that
    // cancel out (ledger.entry.created, two lines each), inside a window [from, to).
    const from = new Date(Date.now() - 1).toISOString();
    await sleep(20);
    const accounts: VirtualAccount[] = [];
    for (const i of [1, 2, 3]) {
      accounts.push(await sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-rpl${i}-${RUN}`, type: 'checking' }));
    }
    for (const direction of ['credit', 'debit'] as const) {
      await sb.ledger.entries.create({ type: 'adjustment', description: `replay ${direction} ${RUN}`, virtual_account_id: va1.id, direction, amount: 150 });
    }
    // The endpoint receives the three accounts' events once, as new events (replay_id null).
    const originals = await poll(
      () => sb.webhooks.deliveries.list(endpoint.id, { status: 'succeeded' }).toArray(),
      (l) => l.length >= 3,
    );
    assert.equal(originals.length, 3);
    assert.ok(originals.every((d) => d.replay_id === null && d.event_type === 'virtual_account.created'), JSON.stringify(originals));
    await sleep(100);
    const to = new Date().toISOString();
    await sleep(20);

    // What the window holds, as the events list shows it.
    const inWindow = async (type: 'virtual_account.created' | 'ledger.entry.created') =>
      poll(
        () => sb.events.list({ type, created_after: from, created_before: to, limit: 100 }).toArray(),
        (l) => (type === 'virtual_account.created' ? accounts.every((a) => l.some((e) => (e.data.object as VirtualAccount).id === a.id)) : l.length >= 4),
      );
    const vaEvents = await inWindow('virtual_account.created');
    const leEvents = await inWindow('ledger.entry.created');
    assert.deepEqual(
      new Set(originals.map((d) => d.event_id)),
      new Set(vaEvents.filter((e) => accounts.some((a) => a.id === (e.data.object as VirtualAccount).id)).map((e) => e.id)),
    );

    /** The deliveries of a replay, once all `n` have succeeded, and what the receiver got of each (signed, the original event). */
    const replayedDeliveries = async (replayId: string, n: number) => {
      const list = await poll(
        () => sb.webhooks.deliveries.list(endpoint.id, { limit: 100 }).toArray(),
        (l) => {
          const mine = l.filter((d) => d.replay_id === replayId);
          return mine.length >= n && mine.every((d) => d.status === 'succeeded') &&
            mine.every((d) => received().some((r) => r.headers['webhook-id'] === d.id));
        },
        30_000,
      );
      const mine = list.filter((d) => d.replay_id === replayId);
      assert.equal(mine.length, n);
      return mine.map((d) => {
        const got = received().filter((r) => r.headers['webhook-id'] === d.id);
        assert.equal(got.length, 1, `delivery ${d.id} arrived once`);
        const event = Treasury.webhooks.verify(got[0]!.body, got[0]!.headers, endpoint.secret);
        assert.equal(event.id, d.event_id, 'the original event id');
        assert.equal(event.type, d.event_type);
        assert.ok(!originals.some((o) => o.id === d.id), 'a new delivery id');
        return { delivery: d, event };
      });
    };

    // Without types: the types the endpoint subscribes to. 201, each event of the window sent again.
    const body = { created_after: from, created_before: to };
    const r1 = await sb.webhooks.replay(endpoint.id, body, { idempotencyKey: `replay-${RUN}` });
    assert.equal(r1.lastResponse.status, 201);
    assert.equal(r1.lastResponse.idempotentReplayed, false);
    assert.match(r1.id, /^rpl_/);
    assert.equal(r1.object, 'webhook_replay');
    assert.equal(r1.webhook_id, endpoint.id);
    assert.equal(Date.parse(r1.created_after), Date.parse(from));
    assert.equal(Date.parse(r1.created_before), Date.parse(to));
    assert.equal(r1.types, null);
    assert.ok(r1.created_at);
    assert.equal(r1.replayed, vaEvents.length);
    const first = await replayedDeliveries(r1.id, r1.replayed);
    assert.deepEqual(new Set(first.map((x) => x.event.id)), new Set(vaEvents.map((e) => e.id)));
    // The replayed event is the one first sent.
    for (const o of originals) {
      const firstTime = received().find((r) => r.headers['webhook-id'] === o.id)!;
      const again = first.find((x) => x.event.id === o.event_id)!;
      assert.deepEqual(again.event, eventOf(firstTime));
    }

    // The same key and body: the same replay (200, Idempotent-Replayed), no second batch.
    const countBefore = received().length;
    const r1again = await sb.webhooks.replay(endpoint.id, body, { idempotencyKey: `replay-${RUN}` });
    assert.equal(r1again.lastResponse.status, 200);
    assert.equal(r1again.lastResponse.idempotentReplayed, true);
    assert.deepEqual(r1again, r1);
    await sleep(1_000);
    assert.equal(received().length, countBefore, 'nothing sent again');
    const afterAgain = await sb.webhooks.deliveries.list(endpoint.id, { limit: 100 }).toArray();
    assert.equal(afterAgain.length, originals.length + r1.replayed);
    // The same key with another body: 409 idempotency_conflict, not retried.
    let mark = statuses.length;
    await expectError(
      sb.webhooks.replay(endpoint.id, { ...body, types: ['virtual_account.created'] }, { idempotencyKey: `replay-${RUN}` }),
      ConflictError,
      'idempotency_conflict',
    );
    assert.deepEqual(answeredSince(mark), [409]);

    // With types: those types, subscribed to or not.
    const types = ['ledger.entry.created', 'virtual_account.created'] as const;
    const r2 = await sb.webhooks.replay(endpoint.id, { ...body, types: [...types] });
    assert.equal(r2.lastResponse.status, 201);
    assert.notEqual(r2.id, r1.id);
    assert.deepEqual(r2.types, [...types]);
    assert.equal(r2.replayed, vaEvents.length + leEvents.length);
    const second = await replayedDeliveries(r2.id, r2.replayed);
    assert.deepEqual(new Set(second.map((x) => x.event.id)), new Set([...vaEvents, ...leEvents].map((e) => e.id)));
    assert.equal(second.filter((x) => x.event.type === 'ledger.entry.created').length, leEvents.length);
    const r3 = await sb.webhooks.replay(endpoint.id, { ...body, types: ['ledger.entry.created'] });
    assert.equal(r3.replayed, leEvents.length);
    await replayedDeliveries(r3.id, r3.replayed);

    // A window in the future replays nothing; YYYY-MM-DD dates are accepted.
    const future = await sb.webhooks.replay(endpoint.id, { created_after: '2999-01-01', created_before: '2999-01-02' });
    assert.equal(future.replayed, 0);

    // Refusals, none retried: a reversed or empty window, unknown types (400 invalid_request naming the field).
    for (const [bad, param] of [
      [{ created_after: to, created_before: from }, 'created_before'],
      [{ created_after: from, created_before: from }, 'created_before'],
      [{ ...body, types: ['payment.nope'] }, 'types[0]'],
      [{ ...body, types: ['virtual_account.created', '*'] }, 'types[1]'],
      [{ ...body, types: ['webhook.test'] }, 'types[0]'],
      [{ created_after: 'yesterday', created_before: to }, 'created_after'],
    ] as const) {
      mark = statuses.length;
      const e = await expectError(sb.webhooks.replay(endpoint.id, bad as any), BadRequestError, 'invalid_request');
      assert.equal(e.param, param, JSON.stringify(bad));
      assert.deepEqual(answeredSince(mark), [400], 'a 400 is not retried');
    }
    // Another platform's endpoint, an unknown one: 404.
    await expectError(foreign.webhooks.replay(endpoint.id, body), NotFoundError, 'not_found');
    await expectError(sb.webhooks.replay('we_0000000000000000000000000a', body), NotFoundError, 'not_found');
    // A disabled endpoint: 409 invalid_state.
    await sb.webhooks.update(endpoint.id, { status: 'disabled' });
    await expectError(sb.webhooks.replay(endpoint.id, body), ConflictError, 'invalid_state');
    // No replay of the refused requests was sent.
    const finalList = await sb.webhooks.deliveries.list(endpoint.id, { limit: 100 }).toArray();
    assert.equal(finalList.length, originals.length + r1.replayed + r2.replayed + r3.replayed);
    await sb.webhooks.delete(endpoint.id);
    await expectError(sb.webhooks.replay(endpoint.id, body), NotFoundError, 'not_found');
  });

  test('journal entries are listed with every filter, over pages with the filters kept; each is the one retrieve shows', async () => {
    // A client of its own that notes every URL it requests (and still records routes).
    const urls: URL[] = [];
    const c = new Treasury({
      apiKey: sandboxKey,
      baseURL: BASE_URL,
      // Only the answered attempts: one a busy server refused for now (429, 503) is retried unchanged.
      fetch: async (input, init) => {
        const res = await recordingFetch(input, init);
        if (res.status !== 429 && res.status !== 503) urls.push(new URL(String(input)));
        return res;
      },
    });
    const tag = `jl-${RUN}`;
    const from = new Date(Date.now() - 1).toISOString();
    await sleep(20);
    const post = (type: 'adjustment' | 'fee' | 'correction', direction: 'credit' | 'debit', amount: number, metadata: Record<string, string>) =>
      sb.ledger.entries.create({ type, description: `jl ${type} ${RUN}`, virtual_account_id: va1.id, direction, amount, metadata: { jl: tag, ...metadata } });
    const e1 = await post('adjustment', 'credit', 400, { region: 'east', 'order id': 'A&B' });
    const e2 = await post('fee', 'debit', 100, { region: 'west' });
    const e3 = await post('correction', 'debit', 300, { region: 'east', tier: 'gold' });
    const manual = [e3, e2, e1]; // newest first
    const payment = await sb.payments.create({ virtual_account_id: va1.id, amount: 1_000, rail: 'rtp', destination: DEST, description: `jl ${RUN}` });
    const done = await poll(() => sb.payments.retrieve(payment.id), (p) => ['completed', 'failed'].includes(p.status), 15_000);
    assert.equal(done.status, 'completed');
    const payJE = await sb.ledger.journalEntries.retrieve(done.journal_entry_id!);
    assert.equal(payJE.status, 'posted');

    /** Lists with `params` over pages of `limit`; checks every page's request kept the filters; returns the items. */
    const walk = async (params: ListJournalEntriesParams, limit = 1) => {
      const mark = urls.length;
      const items: JournalEntry[] = [];
      let pages = 0;
      for await (const page of c.ledger.journalEntries.list({ ...params, limit }).pages()) {
        pages++;
        assert.ok(page.data.length <= limit);
        items.push(...page.data);
      }
      const sent = urls.slice(mark).filter((u) => u.pathname.endsWith('/ledger/journal-entries'));
      assert.ok(sent.length >= pages);
      for (const [i, u] of sent.entries()) {
        for (const [k, v] of Object.entries(params)) {
          if (k === 'metadata') {
            for (const [mk, mv] of Object.entries(v as Record<string, string>)) assert.equal(u.searchParams.get(`metadata[${mk}]`), mv, `${u}`);
          } else {
            assert.equal(u.searchParams.get(k), String(v), `${u}`);
          }
        }
        assert.equal(u.searchParams.get('limit'), String(limit));
        assert.equal(u.searchParams.has('cursor'), i > 0, 'every page after the first carries the cursor');
      }
      return items;
    };
    const ids = (l: JournalEntry[]) => l.map((e) => e.id);

    // metadata: one pair, several pairs (all must match, key and value URL-encoded).
    const tagged = await walk({ metadata: { jl: tag } });
    assert.deepEqual(ids(tagged), ids(manual), 'newest first');
    for (const e of tagged) {
      const one = await sb.ledger.journalEntries.retrieve(e.id);
      assert.deepEqual(e, one, 'the list shows each entry as retrieve does');
    }
    assert.deepEqual(tagged.map((e) => e.metadata), manual.map((e) => e.metadata));
    assert.deepEqual(ids(await walk({ metadata: { jl: tag, region: 'east' } }, 2)), [e3.id, e1.id]);
    assert.deepEqual(ids(await walk({ metadata: { jl: tag, 'order id': 'A&B' } })), [e1.id]);
    assert.deepEqual(ids(await walk({ metadata: { jl: tag, region: 'north' } })), []);
    // type, status, source_type, source_id, created_*.
    assert.deepEqual(ids(await walk({ type: 'fee', metadata: { jl: tag } })), [e2.id]);
    assert.deepEqual(ids(await walk({ type: 'correction', status: 'posted', metadata: { jl: tag } })), [e3.id]);
    assert.deepEqual(ids(await walk({ status: 'posted', metadata: { jl: tag } }, 2)), ids(manual));
    assert.deepEqual(ids(await walk({ status: 'archived', metadata: { jl: tag } })), []);
    assert.deepEqual(ids(await walk({ source_type: 'journal_entry', metadata: { jl: tag } }, 2)), ids(manual));
    assert.deepEqual(ids(await walk({ source_id: e2.id })), [e2.id]);
    const byPayment = await walk({ source_type: 'payment', source_id: payment.id });
    assert.deepEqual(ids(byPayment), [payJE.id]);
    assert.deepEqual(byPayment[0], payJE);
    assert.deepEqual(byPayment[0]!.source, { type: 'payment', id: payment.id });
    assert.equal(byPayment[0]!.type, 'payment');
    assert.deepEqual(ids(await walk({ source_type: 'book_transfer', source_id: payment.id })), []);
    assert.deepEqual(ids(await walk({ metadata: { jl: tag }, created_after: e2.created_at })), [e3.id, e2.id], 'created_after is inclusive');
    assert.deepEqual(ids(await walk({ metadata: { jl: tag }, created_before: e2.created_at })), [e1.id], 'created_before is exclusive');
    // The account's entries of the window: these four (and any other posted on va1 meanwhile), newest first.
    const onVa1 = await walk({ virtual_account_id: va1.id, created_after: from }, 2);
    for (const want of [payJE, ...manual]) assert.ok(onVa1.some((e) => e.id === want.id), want.id);
    assert.ok(onVa1.every((e) => e.entries.some((l) => l.virtual_account_id === va1.id)));
    const pos = [payJE, ...manual].map((w) => onVa1.findIndex((e) => e.id === w.id));
    assert.deepEqual(pos, [...pos].sort((a, b) => a - b), 'newest first');
    assert.equal(new Set(ids(onVa1)).size, onVa1.length, 'each once');
    for (const e of onVa1) assert.deepEqual(e, await sb.ledger.journalEntries.retrieve(e.id));
    assert.deepEqual(ids(await walk({ virtual_account_id: 'va_0000000000000000000000000a' })), [], 'an unknown account: empty');
    // Awaited: one page.
    const page = await c.ledger.journalEntries.list({ metadata: { jl: tag }, limit: 2 });
    assert.equal(page.object, 'list');
    assert.deepEqual(ids(page.data), [e3.id, e2.id]);
    assert.equal(page.has_more, true);
    assert.ok(page.next_cursor);

    // Bad values: 400 invalid_request naming the parameter, not retried.
    for (const [bad, param] of [
      [{ type: 'payment_fee' }, 'type'],
      [{ status: 'done' }, 'status'],
      [{ source_type: 'refund' }, 'source_type'],
      [{ created_after: 'yesterday' }, 'created_after'],
      [{ limit: 0 }, 'limit'],
    ] as const) {
      const mark = statuses.length;
      const e = await expectError(sb.ledger.journalEntries.list(bad as any).firstPage(), BadRequestError, 'invalid_request');
      assert.equal(e.param, param, JSON.stringify(bad));
      assert.deepEqual(answeredSince(mark), [400], 'a 400 is not retried');
    }
  });

  test('counterparties: saved, read, listed with filters over pages, idempotent, verified by prenote (verified, failed R03), paid, required verified, deleted; live pending; every refusal from the server', async (ctx) => {
    // An account of its own (KYB approved, funded with $1,000.00) to pay the counterparties from.
    const acct = await sb.virtualAccounts.create({ platform_id: platformId, entity_ref: `biz-cp-${RUN}`, type: 'checking' });
    const k = await sb.kyb.create(kybBody(acct.id, `Counterparty Co ${RUN}`, '12-3450007'));
    assert.equal((await poll(() => sb.kyb.retrieve(k.id), (x) => x.status !== 'pending')).status, 'approved');
    await sb.simulations.inboundTransfers.create({ virtual_account_id: acct.id, amount: 100_000, rail: 'rtp', originator: ORIGINATOR });
    await poll(() => sb.virtualAccounts.retrieve(acct.id), (a) => a.balance.available === 100_000);
    // Another platform: it sees none of this platform's counterparties.
    const other = await op.platforms.register({ name: `node client cp ${RUN}`, contact_email: 'ops@example.com' });
    const foreign = newClient((await op.platforms.approve(other.id)).sandbox_api_key.secret);

    // An endpoint subscribed to the two counterparty events alone, on its own path of the journey's receiver.
    const cpPath = '/hooks/counterparties';
    const cpEndpoint = await sb.webhooks.create({
      url: new URL(cpPath, receiverURL).toString(),
      events: ['counterparty.verified', 'counterparty.verification_failed'],
      description: `counterparties ${RUN}`,
    });
    assert.deepEqual(cpEndpoint.events, ['counterparty.verified', 'counterparty.verification_failed']);
    const cpDeliveries = () => deliveries.filter((d) => d.path === cpPath);

    // Saved: the shape of the document, the account number shown by its last four digits only.
    const ACCOUNT = '98765432101';
    const body = { name: `Initech ${RUN}`, account_number: ACCOUNT, routing_number: '021000021', account_type: 'checking' as const, metadata: { run: RUN, group: 'cp' } };
    const since = new Date(Date.now() - 1).toISOString();
    const a = await sb.counterparties.create(body, { idempotencyKey: `cp-a-${RUN}` });
    assert.equal(a.lastResponse.status, 201);
    assert.equal(a.lastResponse.idempotentReplayed, false);
    assert.deepEqual(Object.keys(a).sort(), ['account_number_last4', 'account_type', 'created_at', 'environment', 'id', 'metadata', 'name', 'object', 'routing_number', 'verification']);
    assert.match(a.id, /^cp_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(a.object, 'counterparty');
    assert.equal(a.name, body.name);
    assert.equal(a.account_number_last4, '2101');
    assert.equal(a.routing_number, '021000021');
    assert.equal(a.account_type, 'checking');
    assert.deepEqual(a.verification, { status: 'unverified', method: null }, 'no failure_code unless failed');
    assert.deepEqual(a.metadata, body.metadata);
    assert.equal(a.environment, 'sandbox');
    assert.match(a.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.ok(!JSON.stringify(a).includes(ACCOUNT), 'the whole account number is never shown');

    // The same key and body: the same counterparty (200, replayed); another body: 409 idempotency_conflict, not retried.
    const again = await sb.counterparties.create(body, { idempotencyKey: `cp-a-${RUN}` });
    assert.equal(again.id, a.id);
    assert.equal(again.lastResponse.status, 200);
    assert.equal(again.lastResponse.idempotentReplayed, true);
    let mark = statuses.length;
    const conflict = await expectError(sb.counterparties.create({ ...body, name: `Other ${RUN}` }, { idempotencyKey: `cp-a-${RUN}` }), ConflictError, 'idempotency_conflict');
    assert.equal(conflict.resourceId, a.id);
    assert.deepEqual(answeredSince(mark), [409], 'an idempotency conflict is not retried');

    // Read back as created.
    const got = await sb.counterparties.retrieve(a.id);
    assert.deepEqual(JSON.parse(JSON.stringify(got)), JSON.parse(JSON.stringify(a)));

    // More: one whose prenote fails (4000000003 → R03), one left unverified, and one without this run's metadata.
    const b = await sb.counterparties.create({ name: `Returned ${RUN}`, account_number: '4000000003', routing_number: '021000021', account_type: 'savings', metadata: { run: RUN, group: 'cp', magic: 'r03' } });
    assert.equal(b.account_number_last4, '0003');
    assert.equal(b.account_type, 'savings');
    const c = await sb.counterparties.create({ name: `Unverified ${RUN}`, account_number: '55554444', routing_number: '021000021', account_type: 'checking', metadata: { run: RUN, group: 'cp' } });
    const e = await sb.counterparties.create({ name: `Elsewhere ${RUN}`, account_number: '11112222', routing_number: '021000021', account_type: 'checking', metadata: { group: 'other' } });
    const until = new Date(Date.now() + 1).toISOString();

    // Validation: 400 naming the field, not retried.
    for (const [bad, param] of [
      [{ routing_number: '021000022' }, 'routing_number'],
      [{ account_number: '12a' }, 'account_number'],
      [{ account_type: 'brokerage' }, 'account_type'],
      [{ name: '' }, 'name'],
    ] as const) {
      mark = statuses.length;
      const err = await expectError(sb.counterparties.create({ ...body, ...(bad as any) }), BadRequestError, 'invalid_request');
      assert.equal(err.param, param, JSON.stringify(bad));
      assert.deepEqual(answeredSince(mark), [400], 'a 400 is not retried');
    }

    // Lists: newest first, the metadata filter kept on every page (limit 1 and 2).
    const ids = (l: { id: string }[]) => l.map((x) => x.id);
    for (const limit of [1, 2]) {
      const pages: string[][] = [];
      for await (const page of sb.counterparties.list({ metadata: { run: RUN }, limit }).pages()) {
        assert.ok(page.data.length <= limit);
        pages.push(ids(page.data));
      }
      assert.ok(pages.length >= 2, `several pages with limit ${limit}`);
      assert.deepEqual(pages.flat(), [c.id, b.id, a.id], 'this run\'s counterparties alone, newest first, over pages');
    }
    assert.deepEqual(ids(await sb.counterparties.list({ metadata: { run: RUN, magic: 'r03' }, limit: 1 }).toArray()), [b.id], 'several pairs all match');
    assert.deepEqual(ids(await sb.counterparties.list({ metadata: { group: 'other' } }).toArray()), [e.id]);
    assert.deepEqual(ids(await sb.counterparties.list({ created_after: since, created_before: until, limit: 2 }).toArray()), [e.id, c.id, b.id, a.id]);
    assert.deepEqual(ids(await sb.counterparties.list({ verification_status: 'unverified', metadata: { run: RUN }, limit: 1 }).toArray()), [c.id, b.id, a.id]);

    // Verify by prenote: pending at once; again while pending, 409 invalid_state (not retried); verified after the delay.
    const pending = await sb.counterparties.verify(a.id);
    assert.equal(pending.lastResponse.status, 200);
    assert.equal(pending.id, a.id);
    assert.equal(pending.verification.status, 'pending');
    assert.equal(pending.verification.method, 'prenote');
    mark = statuses.length;
    const twice = await expectError(sb.counterparties.verify(a.id, { method: 'prenote' }), ConflictError, 'invalid_state');
    assert.equal(twice.resourceId, a.id);
    assert.deepEqual(answeredSince(mark), [409], 'invalid_state is not retried');
    const failing = await sb.counterparties.verify(b.id);
    assert.equal(failing.verification.status, 'pending');
    const verified = await poll(() => sb.counterparties.retrieve(a.id), (x) => x.verification.status !== 'pending');
    assert.deepEqual(verified.verification, { status: 'verified', method: 'prenote' });
    const failed = await poll(() => sb.counterparties.retrieve(b.id), (x) => x.verification.status !== 'pending');
    assert.deepEqual(failed.verification, { status: 'failed', method: 'prenote', failure_code: 'R03' });
    // A verified one is not verified twice.
    await expectError(sb.counterparties.verify(a.id), ConflictError, 'invalid_state');
    // Invalid method: 400.
    const badMethod = await expectError(sb.counterparties.verify(c.id, { method: 'microdeposits' as any }), BadRequestError, 'invalid_request');
    assert.equal(badMethod.param, 'method');

    // The filter on verification status.
    assert.deepEqual(ids(await sb.counterparties.list({ verification_status: 'verified', metadata: { run: RUN } }).toArray()), [a.id]);
    assert.deepEqual(ids(await sb.counterparties.list({ verification_status: 'failed', metadata: { run: RUN } }).toArray()), [b.id]);
    assert.deepEqual(ids(await sb.counterparties.list({ verification_status: 'unverified', metadata: { run: RUN }, limit: 1 }).toArray()), [c.id]);
    mark = statuses.length;
    const badStatus = await expectError(sb.counterparties.list({ verification_status: 'done' as any }).firstPage(), BadRequestError, 'invalid_request');
    assert.equal(badStatus.param, 'verification_status');
    assert.deepEqual(answeredSince(mark), [400]);

    // The events, in the list and delivered (signed) to the endpoint: data.object the counterparty, no account number.
    const verifiedEvent = (await poll(
      () => sb.events.list({ type: 'counterparty.verified', limit: 100 }).toArray(),
      (l) => l.some((ev) => (ev.data.object as any).id === a.id),
    )).find((ev) => (ev.data.object as any).id === a.id)!;
    assert.deepEqual((verifiedEvent.data.object as any).verification, { status: 'verified', method: 'prenote' });
    const failedEvent = (await poll(
      () => sb.events.list({ type: 'counterparty.verification_failed', limit: 100 }).toArray(),
      (l) => l.some((ev) => (ev.data.object as any).id === b.id),
    )).find((ev) => (ev.data.object as any).id === b.id)!;
    assert.deepEqual((failedEvent.data.object as any).verification, { status: 'failed', method: 'prenote', failure_code: 'R03' });
    assert.deepEqual(JSON.parse(JSON.stringify(await sb.events.retrieve(failedEvent.id))), JSON.parse(JSON.stringify(failedEvent)));
    for (const ev of [verifiedEvent, failedEvent]) {
      const d = await waitForDelivery((x) => x.path === cpPath && eventOf(x).id === ev.id);
      const delivered = Treasury.webhooks.verify(d.body, d.headers, cpEndpoint.secret);
      assert.equal(delivered.type, ev.type);
      assert.deepEqual((delivered.data.object as any).verification, (ev.data.object as any).verification);
      assert.ok(!d.body.includes(ACCOUNT) && !d.body.includes('4000000003'), 'no whole account number in an event');
    }
    assert.deepEqual(cpDeliveries().map((d) => eventOf(d).type).sort(), ['counterparty.verification_failed', 'counterparty.verified'], 'the endpoint gets the two subscribed events only');

    // A failed one may be verified again: pending once more, its failure_code cleared; then failed again.
    const retried = await sb.counterparties.verify(b.id);
    assert.deepEqual(retried.verification, { status: 'pending', method: 'prenote' });
    assert.equal((await poll(() => sb.counterparties.retrieve(b.id), (x) => x.verification.status !== 'pending')).verification.failure_code, 'R03');

    // Paid by counterparty_id: the destination copied, counterparty_id shown; a raw destination has none.
    const pay = (extra: Partial<PaymentCreateParams>, leg: string) =>
      sb.payments.create({ virtual_account_id: acct.id, amount: 1_000, rail: 'rtp', description: `cp ${leg} ${RUN}`, metadata: { run: RUN, leg }, ...extra } as PaymentCreateParams);
    const toA = await pay({ counterparty_id: a.id }, 'a');
    assert.equal(toA.lastResponse.status, 201);
    assert.equal(toA.counterparty_id, a.id);
    assert.deepEqual(toA.destination, { account_number: ACCOUNT, routing_number: '021000021', name: a.name });
    const readBack = await sb.payments.retrieve(toA.id);
    assert.equal(readBack.counterparty_id, a.id);
    assert.deepEqual(readBack.destination, toA.destination);
    const raw = await pay({ destination: DEST }, 'raw');
    assert.ok(!('counterparty_id' in raw), 'a payment to a raw destination has no counterparty_id');
    // Both, or neither: 400 counterparty_id; not a cp_ id: 400; unknown, or another platform's: 404 counterparty_id.
    for (const [extra, cls, code, param] of [
      [{ destination: DEST, counterparty_id: a.id }, BadRequestError, 'invalid_request', 'counterparty_id'],
      [{}, BadRequestError, 'invalid_request', 'counterparty_id'],
      [{ counterparty_id: acct.id }, BadRequestError, 'invalid_request', 'counterparty_id'],
      [{ counterparty_id: 'cp_00000000000000000000000000' }, NotFoundError, 'not_found', 'counterparty_id'],
    ] as const) {
      mark = statuses.length;
      const err = await expectError(pay(extra as any, 'bad'), cls as any, code);
      assert.equal((err as any).param, param, JSON.stringify(extra));
      assert.deepEqual(answeredSince(mark), [(err as any).status], 'not retried');
    }

    // require_verified_counterparty: an unverified (or failed) counterparty and a raw destination are 422; a verified one pays.
    assert.equal((await sb.platform.settings.retrieve()).require_verified_counterparty, false, 'off by default');
    const on = await sb.platform.settings.update({ require_verified_counterparty: true });
    ctx.after(async () => {
      // Whatever happened above, the setting goes back off for the rest of the journey.
      await sb.platform.settings.update({ require_verified_counterparty: false });
    });
    try {
      assert.equal(on.require_verified_counterparty, true);
      assert.equal((await sb.platform.settings.retrieve()).require_verified_counterparty, true);
      for (const [cp, leg] of [[c, 'unverified'], [b, 'failed']] as const) {
        mark = statuses.length;
        const err = await expectError(pay({ counterparty_id: cp.id }, leg), UnprocessableEntityError, 'counterparty_not_verified');
        assert.equal(err.param, 'counterparty_id');
        assert.equal(err.resourceId, cp.id);
        assert.deepEqual(answeredSince(mark), [422], 'a 422 is not retried');
      }
      const rawRefused = await expectError(pay({ destination: DEST }, 'raw-refused'), UnprocessableEntityError, 'counterparty_not_verified');
      assert.equal(rawRefused.param, 'destination');
      const ok = await pay({ counterparty_id: a.id }, 'a-required');
      assert.equal(ok.counterparty_id, a.id);
      assert.ok(['pending', 'submitted', 'completed'].includes(ok.status), ok.status);
    } finally {
      const off = await sb.platform.settings.update({ require_verified_counterparty: false });
      assert.equal(off.require_verified_counterparty, false);
    }
    assert.equal((await sb.platform.settings.retrieve()).require_verified_counterparty, false);
    const toC = await pay({ counterparty_id: c.id }, 'c');
    assert.equal(toC.counterparty_id, c.id, 'with the setting off an unverified counterparty is paid');

    // Deleted: deleted:true, then 404 everywhere (retrieve, delete, verify, a new payment), left out of lists;
    // the payment already made keeps its copied destination.
    const del = await sb.counterparties.delete(c.id);
    assert.deepEqual({ ...del }, { id: c.id, object: 'counterparty', deleted: true });
    assert.equal(del.lastResponse.status, 200);
    await expectError(sb.counterparties.retrieve(c.id), NotFoundError, 'not_found');
    await expectError(sb.counterparties.delete(c.id), NotFoundError, 'not_found');
    await expectError(sb.counterparties.verify(c.id), NotFoundError, 'not_found');
    const gone = await expectError(pay({ counterparty_id: c.id }, 'deleted'), NotFoundError, 'not_found');
    assert.equal(gone.param, 'counterparty_id');
    assert.deepEqual(ids(await sb.counterparties.list({ metadata: { run: RUN } }).toArray()), [b.id, a.id]);
    const kept = await sb.payments.retrieve(toC.id);
    assert.equal(kept.counterparty_id, c.id);
    assert.equal(kept.destination.account_number, '55554444');

    // Another platform: 404 for each of this platform's counterparties, an empty list; its own is 404 here.
    await expectError(foreign.counterparties.retrieve(a.id), NotFoundError, 'not_found');
    await expectError(foreign.counterparties.verify(b.id), NotFoundError, 'not_found');
    await expectError(foreign.counterparties.delete(a.id), NotFoundError, 'not_found');
    assert.deepEqual(await foreign.counterparties.list().toArray(), []);
    const theirs = await foreign.counterparties.create({ name: `Theirs ${RUN}`, account_number: '33334444', routing_number: '021000021', account_type: 'checking' });
    await expectError(sb.counterparties.retrieve(theirs.id), NotFoundError, 'not_found');
    const foreignPay = await expectError(pay({ counterparty_id: theirs.id }, 'foreign'), NotFoundError, 'not_found');
    assert.equal(foreignPay.param, 'counterparty_id');
    await expectError(sb.counterparties.retrieve('cp_unknown'), NotFoundError, 'not_found');

    // Live: counterparties are saved, read, listed and deleted like sandbox ones; a prenote is pending at once (it
    // leaves in the next outbound ACH file, and nothing settles it during a test), and again while pending, 409
    // invalid_state, not retried.
    const live = newClient(liveKey, { maxRetries: 3 });
    const liveCp = await live.counterparties.create({ name: `Live ${RUN}`, account_number: '77778888', routing_number: '021000021', account_type: 'checking' });
    assert.equal(liveCp.environment, 'live');
    assert.deepEqual(liveCp.verification, { status: 'unverified', method: null });
    mark = statuses.length;
    const livePending = await live.counterparties.verify(liveCp.id);
    assert.equal(livePending.lastResponse.status, 200);
    assert.equal(livePending.id, liveCp.id);
    assert.equal(livePending.environment, 'live');
    assert.deepEqual(livePending.verification, { status: 'pending', method: 'prenote' });
    assert.deepEqual(answeredSince(mark), [200], 'one request');
    mark = statuses.length;
    const liveTwice = await expectError(live.counterparties.verify(liveCp.id, { method: 'prenote' }), ConflictError, 'invalid_state');
    assert.equal(liveTwice.status, 409);
    assert.equal(liveTwice.resourceId, liveCp.id);
    assert.equal(liveTwice.attempts, 1);
    assert.deepEqual(answeredSince(mark), [409], 'invalid_state is not retried');
    assert.deepEqual((await live.counterparties.retrieve(liveCp.id)).verification, { status: 'pending', method: 'prenote' });
    assert.deepEqual(ids(await live.counterparties.list({ verification_status: 'pending' }).toArray()), [liveCp.id]);
    await expectError(sb.counterparties.retrieve(liveCp.id), NotFoundError, 'not_found');
    await expectError(live.counterparties.retrieve(a.id), NotFoundError, 'not_found');
    assert.deepEqual(ids(await live.counterparties.list().toArray()), [liveCp.id]);
    assert.equal((await live.counterparties.delete(liveCp.id)).deleted, true);
  });

  test('every route of the API was called against the server', () => {
    const missed = Object.keys(ROUTES).filter((r) => !hits.has(r));
    assert.deepEqual(missed, [], 'routes this suite never called');
  });
});
