// Behaviour that a real server cannot be made to show on demand, against tiny local HTTP stubs:
// 5xx mapping (InternalServerError), the same Idempotency-Key across retries, x-should-retry,
// connection errors, backoff; and the webhook signature helper on its own.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Treasury, {
  APIConnectionError,
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
  WebhookVerificationError,
  backoff,
  errorClassForStatus,
  retryDelay,
  shouldRetry,
} from '../src/index.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

type Reply = { status: number; headers?: Record<string, string>; body?: unknown };

/** A stub server answering the n-th request with replies[n] (the last one after that). */
async function stub(replies: Reply[]): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      const reply = replies[Math.min(seen.length - 1, replies.length - 1)]!;
      const body = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status, { 'Content-Type': 'application/json', 'X-Request-Id': `req_stub_${seen.length}`, ...reply.headers });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const err = (code: string, message = code) => ({ code, message, request_id: 'req_stub' });
const payment = { id: 'pay_01', object: 'payment', status: 'pending' };
const paymentBody = {
  virtual_account_id: 'va_01',
  amount: 100,
  rail: 'rtp' as const,
  destination: { account_number: '123456789', routing_number: '021000021', name: 'Initech' },
};

describe('errors from the answer status', () => {
  test('each status maps to its class, all APIError', () => {
    const table: Array<[number, Function]> = [
      [400, BadRequestError],
      [401, AuthenticationError],
      [403, PermissionDeniedError],
      [404, NotFoundError],
      [409, ConflictError],
      [422, UnprocessableEntityError],
      [429, RateLimitError],
      [500, InternalServerError],
      [503, InternalServerError],
      [413, APIError],
    ];
    for (const [status, cls] of table) {
      assert.equal(errorClassForStatus(status), cls, String(status));
      const e = APIError.generate(status, err('x'), new Headers());
      assert.ok(e instanceof cls && e instanceof APIError && e instanceof Error);
    }
  });

  test('a real 500 answer throws InternalServerError with the body fields, after the retries', async () => {
    const s = await stub([{ status: 500, body: { ...err('internal_error', 'boom'), request_id: 'req_500' } }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url, maxRetries: 1 });
      const e = await client.payments.retrieve('pay_x').then(
        () => assert.fail('no error'),
        (e: unknown) => e,
      );
      assert.ok(e instanceof InternalServerError, String(e));
      assert.equal(e.status, 500);
      assert.equal(e.code, 'internal_error');
      assert.equal(e.requestId, 'req_500');
      assert.match(e.message, /boom/);
      assert.equal(s.seen.length, 2, 'one retry');
      assert.equal(e.attempts, 2);
    } finally {
      await s.close();
    }
  });

  test('a 500 without a JSON body still maps, with the request id of the header', async () => {
    const s = await stub([{ status: 502, body: 'bad gateway', headers: { 'Content-Type': 'text/plain' } }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url, maxRetries: 0 });
      await assert.rejects(client.events.retrieve('evt_1'), (e: unknown) => {
        assert.ok(e instanceof InternalServerError);
        assert.equal(e.status, 502);
        assert.equal(e.requestId, 'req_stub_1');
        assert.equal(e.body, 'bad gateway');
        return true;
      });
    } finally {
      await s.close();
    }
  });

  test('param and resource_id are exposed as param and resourceId', async () => {
    const s = await stub([
      { status: 409, body: { ...err('idempotency_conflict'), resource_id: 'pay_1' } },
      { status: 400, body: { ...err('invalid_request'), param: 'amount' } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await assert.rejects(client.payments.create(paymentBody), (e: unknown) => {
        assert.ok(e instanceof ConflictError);
        assert.equal(e.resourceId, 'pay_1');
        return true;
      });
      await assert.rejects(client.payments.create(paymentBody), (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.equal(e.param, 'amount');
        return true;
      });
      assert.equal(s.seen.length, 2, '409 idempotency_conflict and 400 are not retried');
    } finally {
      await s.close();
    }
  });
});

describe('retries', () => {
  test('a retried POST sends the same Idempotency-Key on every attempt, and the payment body carries it', async () => {
    const s = await stub([
      { status: 503, headers: { 'Retry-After': '0' }, body: err('unavailable') },
      { status: 500, body: err('internal_error') },
      { status: 201, body: payment },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const p = await client.payments.create(paymentBody);
      assert.equal(p.id, 'pay_01');
      assert.equal(p.lastResponse.attempts, 3);
      assert.equal(s.seen.length, 3);
      const keys = s.seen.map((r) => r.headers['idempotency-key']);
      assert.ok(keys[0] && keys.every((k) => k === keys[0]), `keys: ${keys}`);
      for (const r of s.seen) assert.equal(JSON.parse(r.body).idempotency_key, keys[0]);
      assert.equal(p.lastResponse.idempotencyKey, keys[0]);
    } finally {
      await s.close();
    }
  });

  test("the caller's idempotency key is used as given; other POSTs get a random one each call", async () => {
    const s = await stub([{ status: 201, body: { id: 'va_1' } }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await client.payments.create(paymentBody, { idempotencyKey: 'order-42' });
      await client.payments.create({ ...paymentBody, idempotency_key: 'order-43' });
      await client.virtualAccounts.create({ platform_id: 'plt_1', entity_ref: 'e', type: 'checking' });
      await client.virtualAccounts.create({ platform_id: 'plt_1', entity_ref: 'e', type: 'checking' });
      await client.virtualAccounts.retrieve('va_1');
      assert.equal(s.seen[0]!.headers['idempotency-key'], 'order-42');
      assert.equal(JSON.parse(s.seen[0]!.body).idempotency_key, 'order-42');
      assert.equal(s.seen[1]!.headers['idempotency-key'], 'order-43');
      const [a, b] = [s.seen[2]!.headers['idempotency-key'], s.seen[3]!.headers['idempotency-key']];
      assert.match(String(a), /^[0-9a-f-]{36}$/);
      assert.notEqual(a, b);
      assert.equal(s.seen[4]!.headers['idempotency-key'], undefined, 'no key on GET');
      assert.equal(s.seen[4]!.headers['authorization'], 'Bearer k');
    } finally {
      await s.close();
    }
  });

  test('408, 429 and 409 idempotency_in_progress are retried; other 4xx are not', async () => {
    const s = await stub([
      { status: 408, headers: { 'Retry-After': '0' }, body: err('request_timeout') },
      { status: 429, headers: { 'Retry-After': '0' }, body: err('rate_limited') },
      { status: 409, headers: { 'Retry-After': '0' }, body: err('idempotency_in_progress') },
      { status: 200, body: payment },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url, maxRetries: 3 });
      const p = await client.payments.cancel('pay_01');
      assert.equal(p.lastResponse.attempts, 4);
    } finally {
      await s.close();
    }
    for (const [status, code] of [
      [400, 'invalid_request'],
      [404, 'not_found'],
      [409, 'payment_not_cancelable'],
      [422, 'insufficient_funds'],
    ] as const) {
      const t = await stub([{ status, body: err(code) }]);
      try {
        const client = new Treasury({ apiKey: 'k', baseURL: t.url });
        await assert.rejects(client.payments.cancel('pay_01'), APIError);
        assert.equal(t.seen.length, 1, `${status} ${code} retried`);
      } finally {
        await t.close();
      }
    }
  });

  test('x-should-retry overrides the default decision both ways', async () => {
    const s = await stub([
      { status: 400, headers: { 'x-should-retry': 'true', 'Retry-After': '0' }, body: err('invalid_request') },
      { status: 200, body: payment },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const p = await client.payments.retrieve('pay_01');
      assert.equal(p.lastResponse.attempts, 2);
    } finally {
      await s.close();
    }
    const t = await stub([{ status: 503, headers: { 'x-should-retry': 'false' }, body: err('unavailable') }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: t.url });
      await assert.rejects(client.payments.retrieve('pay_01'), InternalServerError);
      assert.equal(t.seen.length, 1);
    } finally {
      await t.close();
    }
    assert.equal(shouldRetry({ status: 409, headers: new Headers() }, 'idempotency_conflict'), false);
    assert.equal(shouldRetry({ status: 409, headers: new Headers() }, 'idempotency_in_progress'), true);
  });

  test('Retry-After is waited for', async () => {
    const s = await stub([
      { status: 429, headers: { 'Retry-After': '1' }, body: err('rate_limited') },
      { status: 200, body: payment },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const t0 = performance.now();
      await client.payments.retrieve('pay_01');
      const waited = performance.now() - t0;
      assert.ok(waited >= 950, `waited ${waited} ms`);
    } finally {
      await s.close();
    }
  });

  test('maxRetries: 0 throws at once; a Retry-After over 60 s is not waited for', async () => {
    const s = await stub([{ status: 429, headers: { 'Retry-After': '3600' }, body: err('rate_limited') }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await assert.rejects(client.payments.retrieve('pay_01'), (e: unknown) => {
        assert.ok(e instanceof RateLimitError);
        assert.equal(e.retryAfter, 3600);
        return true;
      });
      assert.equal(s.seen.length, 1);
    } finally {
      await s.close();
    }
  });

  test('backoff: exponential from 0.5 s, capped at 8 s', () => {
    for (let i = 0; i < 50; i++) {
      const d1 = backoff(1);
      assert.ok(d1 <= 500 && d1 >= 375, String(d1));
      const d5 = backoff(5);
      assert.ok(d5 <= 8000 && d5 >= 6000, String(d5));
      assert.ok(backoff(12) <= 8000);
    }
    assert.equal(retryDelay(1, new Headers({ 'retry-after': '2' })), 2000);
    const d = retryDelay(3, new Headers());
    assert.ok(d !== null && d <= 2000 && d >= 1500);
  });

  test('connection errors are retried, then throw APIConnectionError', async () => {
    // A port with nothing listening: take one, then close it.
    const s = await stub([{ status: 200 }]);
    const url = s.url;
    await s.close();
    const client = new Treasury({ apiKey: 'k', baseURL: url, maxRetries: 1 });
    const t0 = performance.now();
    await assert.rejects(client.platform.retrieve(), (e: unknown) => {
      assert.ok(e instanceof APIConnectionError);
      assert.ok(e instanceof APIError);
      assert.equal(e.status, undefined);
      return true;
    });
    assert.ok(performance.now() - t0 >= 350, 'waited a backoff before the retry');
  });

  test('lists follow next_cursor while has_more', async () => {
    const s = await stub([
      { status: 200, body: { object: 'list', data: [{ id: 1 }, { id: 2 }], has_more: true, next_cursor: 'c1' } },
      { status: 200, body: { object: 'list', data: [{ id: 3 }], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const ids: number[] = [];
      for await (const p of client.payments.list({ limit: 2, status: 'completed' })) ids.push((p as any).id);
      assert.deepEqual(ids, [1, 2, 3]);
      assert.equal(s.seen[0]!.url, '/v1/payments?limit=2&status=completed');
      assert.equal(s.seen[1]!.url, '/v1/payments?limit=2&status=completed&cursor=c1');
    } finally {
      await s.close();
    }
  });

  test('a metadata filter is sent as metadata[key]=value (URL-encoded) on every page', async () => {
    const s = await stub([
      { status: 200, body: { object: 'list', data: [{ id: 1 }], has_more: true, next_cursor: 'c1' } },
      { status: 200, body: { object: 'list', data: [{ id: 2 }], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const ids = (await client.virtualAccounts.list({ metadata: { region: 'east', 'order id': 'A&B' }, limit: 1 }).toArray()).map((a: any) => a.id);
      assert.deepEqual(ids, [1, 2]);
      const first = '/v1/virtual-accounts?metadata%5Bregion%5D=east&metadata%5Border+id%5D=A%26B&limit=1';
      assert.equal(s.seen[0]!.url, first);
      assert.equal(s.seen[1]!.url, `${first}&cursor=c1`);
      const q = new URL(s.seen[1]!.url, 'http://x').searchParams;
      assert.equal(q.get('metadata[order id]'), 'A&B');
      assert.equal(q.get('metadata[region]'), 'east');
      await client.payments.list({ metadata: {} });
      assert.equal(s.seen[2]!.url, '/v1/payments', 'an empty filter sends nothing');
    } finally {
      await s.close();
    }
  });
});

describe('book transfers (unit)', () => {
  const transfer = { id: 'bt_01', object: 'book_transfer', status: 'completed' };
  const body = { from_virtual_account_id: 'va_a', to_virtual_account_id: 'va_b', amount: 250 };

  test('create always sends an idempotency key, in the body and the header, the same on every retry', async () => {
    const s = await stub([
      { status: 503, headers: { 'Retry-After': '0' }, body: err('unavailable') },
      { status: 409, headers: { 'Retry-After': '0' }, body: err('idempotency_in_progress') },
      { status: 201, body: transfer },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const bt = await client.bookTransfers.create(body);
      assert.equal(bt.id, 'bt_01');
      assert.equal(bt.lastResponse.attempts, 3);
      assert.equal(s.seen.length, 3);
      const keys = s.seen.map((r) => r.headers['idempotency-key']);
      assert.match(String(keys[0]), /^[0-9a-f-]{36}$/, 'a generated key when the caller gives none');
      assert.ok(keys.every((k) => k === keys[0]), `keys: ${keys}`);
      for (const r of s.seen) {
        assert.equal(r.method, 'POST');
        assert.equal(r.url, '/v1/book-transfers');
        assert.deepEqual(JSON.parse(r.body), { ...body, idempotency_key: keys[0] });
      }
      assert.equal(bt.lastResponse.idempotencyKey, keys[0]);
      assert.deepEqual(body, { from_virtual_account_id: 'va_a', to_virtual_account_id: 'va_b', amount: 250 }, "the caller's object is left as it was");
    } finally {
      await s.close();
    }
  });

  test("the caller's key (option or body) is used in both places; each call without one gets a new key", async () => {
    const s = await stub([{ status: 201, body: transfer }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await client.bookTransfers.create(body, { idempotencyKey: 'move-42' });
      await client.bookTransfers.create({ ...body, idempotency_key: 'move-43' });
      await client.bookTransfers.create(body);
      await client.bookTransfers.create(body);
      assert.equal(s.seen[0]!.headers['idempotency-key'], 'move-42');
      assert.equal(JSON.parse(s.seen[0]!.body).idempotency_key, 'move-42');
      assert.equal(s.seen[1]!.headers['idempotency-key'], 'move-43');
      assert.equal(JSON.parse(s.seen[1]!.body).idempotency_key, 'move-43');
      const [a, b] = [s.seen[2]!, s.seen[3]!].map((r) => r.headers['idempotency-key']);
      assert.notEqual(a, b);
      assert.equal(JSON.parse(s.seen[2]!.body).idempotency_key, a);
    } finally {
      await s.close();
    }
  });

  test('a conflict or a refusal is not retried; retrieve and list build their URLs', async () => {
    const s = await stub([
      { status: 409, body: { ...err('idempotency_conflict'), resource_id: 'bt_01' } },
      { status: 422, body: { ...err('insufficient_funds'), resource_id: 'va_a' } },
      { status: 200, body: transfer },
      { status: 200, body: { object: 'list', data: [transfer], has_more: true, next_cursor: 'c1' } },
      { status: 200, body: { object: 'list', data: [{ ...transfer, id: 'bt_00' }], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await assert.rejects(client.bookTransfers.create(body), (e: unknown) => {
        assert.ok(e instanceof ConflictError);
        assert.equal(e.resourceId, 'bt_01');
        assert.equal(e.attempts, 1);
        return true;
      });
      await assert.rejects(client.bookTransfers.create(body), (e: unknown) => {
        assert.ok(e instanceof UnprocessableEntityError);
        assert.equal(e.code, 'insufficient_funds');
        assert.equal(e.resourceId, 'va_a');
        assert.equal(e.attempts, 1);
        return true;
      });
      assert.equal(s.seen.length, 2);
      const one = await client.bookTransfers.retrieve('bt_01');
      assert.equal(one.object, 'book_transfer');
      assert.equal(s.seen[2]!.url, '/v1/book-transfers/bt_01');
      assert.equal(s.seen[2]!.method, 'GET');
      assert.equal(s.seen[2]!.headers['idempotency-key'], undefined);
      const ids = [];
      for await (const t of client.bookTransfers.list({
        virtual_account_id: 'va_a',
        created_after: '2026-01-01',
        metadata: { order: 'A&B' },
        limit: 1,
      })) {
        ids.push(t.id);
      }
      assert.deepEqual(ids, ['bt_01', 'bt_00']);
      const first = '/v1/book-transfers?virtual_account_id=va_a&created_after=2026-01-01&metadata%5Border%5D=A%26B&limit=1';
      assert.equal(s.seen[3]!.url, first);
      assert.equal(s.seen[4]!.url, `${first}&cursor=c1`);
    } finally {
      await s.close();
    }
  });
});

describe('payment approvals (unit)', () => {
  const held = {
    ...payment,
    status: 'requires_approval',
    approval: {
      created_by: 'key_a',
      expires_at: '2026-01-22T09:30:00.000Z',
      approved_at: null,
      approved_by: null,
      denied_at: null,
      denied_by: null,
      denial_reason: null,
    },
  };

  test('approve POSTs no body to /payments/{id}/approve; deny sends its reason, or no body without one', async () => {
    const s = await stub([
      { status: 200, body: { ...held, status: 'pending', approval: { ...held.approval, approved_by: 'key_b' } } },
      { status: 200, body: { ...held, status: 'denied', approval: { ...held.approval, denied_by: 'key_b', denial_reason: 'no PO' } } },
      { status: 200, body: { ...held, status: 'denied' } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const approved = await client.payments.approve('pay_01/x');
      assert.equal(approved.status, 'pending');
      assert.equal(approved.approval?.approved_by, 'key_b');
      assert.equal(s.seen[0]!.method, 'POST');
      assert.equal(s.seen[0]!.url, '/v1/payments/pay_01%2Fx/approve', 'the id is one path segment');
      assert.equal(s.seen[0]!.body, '');
      assert.equal(s.seen[0]!.headers['content-type'], undefined);

      const denied = await client.payments.deny('pay_01', { reason: 'no PO' }, { requestId: 'deny-1' });
      assert.equal(denied.status, 'denied');
      assert.equal(denied.approval?.denial_reason, 'no PO');
      assert.equal(s.seen[1]!.url, '/v1/payments/pay_01/deny');
      assert.deepEqual(JSON.parse(s.seen[1]!.body), { reason: 'no PO' });
      assert.equal(s.seen[1]!.headers['content-type'], 'application/json');
      assert.equal(s.seen[1]!.headers['x-request-id'], 'deny-1');

      await client.payments.deny('pay_01');
      assert.equal(s.seen[2]!.url, '/v1/payments/pay_01/deny');
      assert.equal(s.seen[2]!.body, '', 'no reason: no body');
    } finally {
      await s.close();
    }
  });

  test("the creating key's 403, an invalid_state 409 and a 404 are thrown at once, not retried", async () => {
    const s = await stub([
      { status: 403, body: err('forbidden', 'the key that created a payment cannot approve it: approve with another key') },
      { status: 409, body: err('invalid_state', 'only a payment awaiting approval can be denied; this one is pending') },
      { status: 404, body: err('not_found') },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await assert.rejects(client.payments.approve('pay_01'), (e: unknown) => {
        assert.ok(e instanceof PermissionDeniedError);
        assert.equal(e.code, 'forbidden');
        assert.equal(e.attempts, 1);
        return true;
      });
      await assert.rejects(client.payments.deny('pay_01', { reason: 'late' }), (e: unknown) => {
        assert.ok(e instanceof ConflictError);
        assert.equal(e.code, 'invalid_state');
        assert.equal(e.attempts, 1);
        return true;
      });
      await assert.rejects(client.payments.approve('pay_02'), NotFoundError);
      assert.equal(s.seen.length, 3);
    } finally {
      await s.close();
    }
  });

  test('a 503 is retried with the same request; the list filters on the new statuses', async () => {
    const s = await stub([
      { status: 503, headers: { 'Retry-After': '0' }, body: err('unavailable') },
      { status: 200, body: { ...held, status: 'denied' } },
      { status: 200, body: { object: 'list', data: [held], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const denied = await client.payments.deny('pay_01', { reason: 'dup' });
      assert.equal(denied.lastResponse.attempts, 2);
      assert.deepEqual(s.seen.slice(0, 2).map((r) => [r.url, r.body]), [
        ['/v1/payments/pay_01/deny', '{"reason":"dup"}'],
        ['/v1/payments/pay_01/deny', '{"reason":"dup"}'],
      ]);
      const waiting = await client.payments.list({ status: 'requires_approval', virtual_account_id: 'va_01' }).toArray();
      assert.deepEqual(waiting.map((p) => p.approval?.created_by), ['key_a']);
      assert.equal(s.seen[2]!.url, '/v1/payments?status=requires_approval&virtual_account_id=va_01');
    } finally {
      await s.close();
    }
  });
});

describe('scheduled payments (unit)', () => {
  const scheduled = { ...payment, status: 'scheduled', scheduled_for: '2026-12-01', journal_entry_id: null };

  test('create sends scheduled_for in the body with the idempotency key; the answer keeps it', async () => {
    const s = await stub([{ status: 201, body: scheduled }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const p = await client.payments.create({ ...paymentBody, scheduled_for: '2026-12-01' }, { idempotencyKey: 'sched-1' });
      assert.equal(p.status, 'scheduled');
      assert.equal(p.scheduled_for, '2026-12-01');
      assert.equal(p.journal_entry_id, null);
      assert.equal(s.seen[0]!.url, '/v1/payments');
      assert.deepEqual(JSON.parse(s.seen[0]!.body), { ...paymentBody, scheduled_for: '2026-12-01', idempotency_key: 'sched-1' });
      assert.equal(s.seen[0]!.headers['idempotency-key'], 'sched-1');
    } finally {
      await s.close();
    }
  });

  test('release POSTs no body to /simulations/payments/{id}/release; a failed release has a null network_code', async () => {
    const failed = {
      ...scheduled,
      status: 'failed',
      failure: { code: 'insufficient_funds', network_code: null, reason: 'short', retry_recommendation: { action: 'retry_later', suggested_rail: null, retry_after: null } },
    };
    const s = await stub([
      { status: 200, body: { ...scheduled, status: 'pending', journal_entry_id: 'je_01' } },
      { status: 200, body: failed },
      { status: 200, body: { object: 'list', data: [scheduled], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const released = await client.simulations.payments.release('pay_01/x', { requestId: 'rel-1' });
      assert.equal(released.status, 'pending');
      assert.equal(released.journal_entry_id, 'je_01');
      assert.equal(s.seen[0]!.method, 'POST');
      assert.equal(s.seen[0]!.url, '/v1/simulations/payments/pay_01%2Fx/release', 'the id is one path segment');
      assert.equal(s.seen[0]!.body, '');
      assert.equal(s.seen[0]!.headers['content-type'], undefined);
      assert.equal(s.seen[0]!.headers['x-request-id'], 'rel-1');
      assert.ok(s.seen[0]!.headers['idempotency-key'], 'a POST sends an Idempotency-Key');

      const f = await client.simulations.payments.release('pay_02');
      assert.equal(f.status, 'failed');
      assert.equal(f.failure?.code, 'insufficient_funds');
      assert.equal(f.failure?.network_code, null);

      const waiting = await client.payments.list({ status: 'scheduled', virtual_account_id: 'va_01' }).toArray();
      assert.deepEqual(waiting.map((p) => p.scheduled_for), ['2026-12-01']);
      assert.equal(s.seen[2]!.url, '/v1/payments?status=scheduled&virtual_account_id=va_01');
    } finally {
      await s.close();
    }
  });

  test("a bad date's 400, a second release's 409 and a 404 are thrown at once, not retried; a 503 is", async () => {
    const s = await stub([
      { status: 400, body: { ...err('invalid_request', 'scheduled_for must be after today (Eastern)'), param: 'scheduled_for' } },
      { status: 409, body: err('invalid_state', 'only a scheduled payment can be released; this one is pending') },
      { status: 404, body: err('not_found') },
      { status: 503, headers: { 'Retry-After': '0' }, body: err('unavailable') },
      { status: 200, body: { ...scheduled, status: 'canceled' } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await assert.rejects(client.payments.create({ ...paymentBody, scheduled_for: '2020-01-01' }), (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.equal(e.param, 'scheduled_for');
        assert.equal(e.attempts, 1);
        return true;
      });
      await assert.rejects(client.simulations.payments.release('pay_01'), (e: unknown) => {
        assert.ok(e instanceof ConflictError);
        assert.equal(e.code, 'invalid_state');
        assert.equal(e.attempts, 1);
        return true;
      });
      await assert.rejects(client.simulations.payments.release('pay_03'), NotFoundError);
      assert.equal(s.seen.length, 3);
      const canceled = await client.payments.cancel('pay_04');
      assert.equal(canceled.status, 'canceled');
      assert.equal(canceled.lastResponse.attempts, 2);
      assert.deepEqual(s.seen.slice(3).map((r) => r.url), ['/v1/payments/pay_04/cancel', '/v1/payments/pay_04/cancel']);
    } finally {
      await s.close();
    }
  });
});

describe('webhook replay (unit)', () => {
  const replay = {
    id: 'rpl_01',
    object: 'webhook_replay',
    webhook_id: 'we_01',
    created_after: '2026-01-01T00:00:00Z',
    created_before: '2026-01-02T00:00:00Z',
    types: ['payment.completed'],
    replayed: 3,
    created_at: '2026-01-02T10:00:00Z',
  };
  const window = { created_after: '2026-01-01', created_before: '2026-01-02' };

  test('replay POSTs the window and types with an Idempotency-Key, the same on every retry; a replayed answer says so', async () => {
    const s = await stub([
      { status: 503, headers: { 'Retry-After': '0' }, body: err('unavailable') },
      { status: 201, body: replay },
      { status: 200, headers: { 'Idempotent-Replayed': 'true' }, body: replay },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const r = await client.webhooks.replay('we_01/x', { ...window, types: ['payment.completed'] });
      assert.equal(r.id, 'rpl_01');
      assert.equal(r.replayed, 3);
      assert.equal(r.lastResponse.status, 201);
      assert.equal(r.lastResponse.attempts, 2);
      assert.equal(r.lastResponse.idempotentReplayed, false);
      assert.equal(s.seen.length, 2);
      const keys = s.seen.map((x) => x.headers['idempotency-key']);
      assert.match(String(keys[0]), /^[0-9a-f-]{36}$/, 'a generated key when the caller gives none');
      assert.equal(keys[1], keys[0], 'the retry reuses the key');
      for (const x of s.seen) {
        assert.equal(x.method, 'POST');
        assert.equal(x.url, '/v1/webhooks/we_01%2Fx/replay', 'the id is one path segment');
        assert.equal(x.headers['content-type'], 'application/json');
        assert.deepEqual(JSON.parse(x.body), { ...window, types: ['payment.completed'] }, 'the key is not put in the body');
      }
      assert.equal(r.lastResponse.idempotencyKey, keys[0]);

      const again = await client.webhooks.replay('we_01', window, { idempotencyKey: 'replay-1' });
      assert.equal(again.id, 'rpl_01');
      assert.equal(again.lastResponse.status, 200);
      assert.equal(again.lastResponse.idempotentReplayed, true);
      assert.equal(s.seen[2]!.headers['idempotency-key'], 'replay-1');
      assert.deepEqual(JSON.parse(s.seen[2]!.body), window, 'no types when none were given');
    } finally {
      await s.close();
    }
  });

  test('replay_too_large and invalid_request are BadRequestError, invalid_state and idempotency_conflict ConflictError, not retried', async () => {
    const s = await stub([
      { status: 400, body: err('replay_too_large', 'the window holds 12000 events; at most 10000') },
      { status: 400, body: { ...err('invalid_request', 'created_before must be after created_after'), param: 'created_before' } },
      { status: 400, body: { ...err('invalid_request', 'unknown event type'), param: 'types[0]' } },
      { status: 409, body: err('invalid_state', 'the endpoint is disabled') },
      { status: 409, body: { ...err('idempotency_conflict'), resource_id: 'rpl_01' } },
      { status: 404, body: err('not_found') },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await assert.rejects(client.webhooks.replay('we_01', window), (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.equal(e.status, 400);
        assert.equal(e.code, 'replay_too_large');
        assert.equal(e.attempts, 1);
        return true;
      });
      await assert.rejects(client.webhooks.replay('we_01', { created_after: '2026-01-02', created_before: '2026-01-01' }), (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.equal(e.code, 'invalid_request');
        assert.equal(e.param, 'created_before');
        return true;
      });
      await assert.rejects(client.webhooks.replay('we_01', { ...window, types: ['nope' as any] }), (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.equal(e.param, 'types[0]');
        return true;
      });
      await assert.rejects(client.webhooks.replay('we_01', window), (e: unknown) => {
        assert.ok(e instanceof ConflictError);
        assert.equal(e.code, 'invalid_state');
        assert.equal(e.attempts, 1);
        return true;
      });
      await assert.rejects(client.webhooks.replay('we_01', window, { idempotencyKey: 'k1' }), (e: unknown) => {
        assert.ok(e instanceof ConflictError);
        assert.equal(e.code, 'idempotency_conflict');
        assert.equal(e.resourceId, 'rpl_01');
        return true;
      });
      await assert.rejects(client.webhooks.replay('we_other', window), NotFoundError);
      assert.equal(s.seen.length, 6, 'none was retried');
    } finally {
      await s.close();
    }
  });

  test('deliveries carry replay_id (null for a new event)', async () => {
    const d = { id: 'msg_01', object: 'webhook_delivery', webhook_endpoint_id: 'we_01', event_id: 'evt_01', event_type: 'payment.completed', status: 'succeeded', attempts: [], next_attempt_at: null, created_at: '2026-01-02T10:00:00Z' };
    const s = await stub([
      { status: 200, body: { object: 'list', data: [{ ...d, id: 'msg_02', replay_id: 'rpl_01' }, { ...d, replay_id: null }], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const list = await client.webhooks.deliveries.list('we_01').toArray();
      assert.deepEqual(list.map((x) => [x.id, x.event_id, x.replay_id]), [['msg_02', 'evt_01', 'rpl_01'], ['msg_01', 'evt_01', null]]);
    } finally {
      await s.close();
    }
  });
});

describe('journal entries list (unit)', () => {
  const je = (id: string) => ({ id, object: 'journal_entry', type: 'adjustment', status: 'posted', entries: [], source: { type: 'journal_entry', id } });

  test('list sends every filter (metadata as deepObject) on every page and walks the cursor', async () => {
    const s = await stub([
      { status: 200, body: { object: 'list', data: [je('je_03'), je('je_02')], has_more: true, next_cursor: 'c1' } },
      { status: 200, body: { object: 'list', data: [je('je_01')], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const ids: string[] = [];
      for await (const e of client.ledger.journalEntries.list({
        type: 'adjustment',
        status: 'posted',
        virtual_account_id: 'va_01',
        source_type: 'journal_entry',
        source_id: 'je_x',
        metadata: { region: 'east', 'order id': 'A&B' },
        created_after: '2026-01-01',
        created_before: '2026-02-01T00:00:00Z',
        limit: 2,
      })) {
        ids.push(e.id);
      }
      assert.deepEqual(ids, ['je_03', 'je_02', 'je_01']);
      const first =
        '/v1/ledger/journal-entries?type=adjustment&status=posted&virtual_account_id=va_01&source_type=journal_entry&source_id=je_x' +
        '&metadata%5Bregion%5D=east&metadata%5Border+id%5D=A%26B&created_after=2026-01-01&created_before=2026-02-01T00%3A00%3A00Z&limit=2';
      assert.equal(s.seen[0]!.url, first);
      assert.equal(s.seen[1]!.url, `${first}&cursor=c1`, 'the filters travel with the next page');
      assert.ok(s.seen.every((x) => x.method === 'GET' && x.headers['idempotency-key'] === undefined));
    } finally {
      await s.close();
    }
  });

  test('awaited, one page; no params, no query; a bad filter is a BadRequestError, not retried', async () => {
    const s = await stub([
      { status: 200, body: { object: 'list', data: [je('je_03')], has_more: true, next_cursor: 'c1' } },
      { status: 400, body: { ...err('invalid_request', 'type must be one of …'), param: 'type' } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const page = await client.ledger.journalEntries.list();
      assert.equal(page.object, 'list');
      assert.deepEqual(page.data.map((e) => e.id), ['je_03']);
      assert.equal(page.next_cursor, 'c1');
      assert.equal(s.seen[0]!.url, '/v1/ledger/journal-entries');
      await assert.rejects(client.ledger.journalEntries.list({ type: 'payment_fee' as any }).toArray(), (e: unknown) => {
        assert.ok(e instanceof BadRequestError);
        assert.equal(e.param, 'type');
        assert.equal(e.attempts, 1);
        return true;
      });
      assert.equal(s.seen.length, 2);
      assert.equal(s.seen[1]!.url, '/v1/ledger/journal-entries?type=payment_fee');
    } finally {
      await s.close();
    }
  });
});

describe('counterparties (unit)', () => {
  const cp = (id: string, status = 'unverified') => ({
    id,
    object: 'counterparty',
    name: 'Initech LLC',
    account_number_last4: '4321',
    routing_number: '021000021',
    account_type: 'checking',
    verification: { status, method: status === 'unverified' ? null : 'prenote' },
    metadata: { region: 'east' },
    environment: 'sandbox',
    created_at: '2026-01-02T10:00:00.000Z',
  });
  const body = { name: 'Initech LLC', account_number: '987654321', routing_number: '021000021', account_type: 'checking' as const, metadata: { region: 'east' } };

  test('create POSTs the body with an Idempotency-Key, the same on every retry; a replayed answer says so', async () => {
    const s = await stub([
      { status: 503, headers: { 'Retry-After': '0' }, body: err('unavailable') },
      { status: 201, body: cp('cp_01') },
      { status: 200, headers: { 'Idempotent-Replayed': 'true' }, body: cp('cp_01') },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const c = await client.counterparties.create(body);
      assert.equal(c.id, 'cp_01');
      assert.equal(c.account_number_last4, '4321');
      assert.equal(c.verification.status, 'unverified');
      assert.equal(c.lastResponse.status, 201);
      assert.equal(c.lastResponse.attempts, 2);
      const keys = s.seen.map((x) => x.headers['idempotency-key']);
      assert.match(String(keys[0]), /^[0-9a-f-]{36}$/, 'a generated key when the caller gives none');
      assert.equal(keys[1], keys[0], 'the retry reuses the key');
      for (const x of s.seen) {
        assert.equal(x.method, 'POST');
        assert.equal(x.url, '/v1/counterparties');
        assert.deepEqual(JSON.parse(x.body), body, 'the body as given, no key in it');
      }
      const again = await client.counterparties.create(body, { idempotencyKey: 'cp-1' });
      assert.equal(again.id, 'cp_01');
      assert.equal(again.lastResponse.idempotentReplayed, true);
      assert.equal(s.seen[2]!.headers['idempotency-key'], 'cp-1');
    } finally {
      await s.close();
    }
  });

  test('retrieve, delete and verify hit their routes (verify sends {method: prenote} by default)', async () => {
    const s = await stub([
      { status: 200, body: cp('cp_01') },
      { status: 200, body: cp('cp_01', 'pending') },
      { status: 200, body: cp('cp_01', 'pending') },
      { status: 200, body: { id: 'cp_01', object: 'counterparty', deleted: true } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      assert.equal((await client.counterparties.retrieve('cp_01/x')).id, 'cp_01');
      const v = await client.counterparties.verify('cp_01');
      assert.equal(v.verification.status, 'pending');
      assert.equal(v.verification.method, 'prenote');
      await client.counterparties.verify('cp_01', { method: 'prenote' }, { idempotencyKey: 'v-1' });
      const d = await client.counterparties.delete('cp_01');
      assert.deepEqual({ ...d }, { id: 'cp_01', object: 'counterparty', deleted: true });
      assert.deepEqual(
        s.seen.map((x) => `${x.method} ${x.url}`),
        ['GET /v1/counterparties/cp_01%2Fx', 'POST /v1/counterparties/cp_01/verify', 'POST /v1/counterparties/cp_01/verify', 'DELETE /v1/counterparties/cp_01'],
      );
      assert.deepEqual(JSON.parse(s.seen[1]!.body), { method: 'prenote' });
      assert.deepEqual(JSON.parse(s.seen[2]!.body), { method: 'prenote' });
      assert.ok(s.seen[1]!.headers['idempotency-key'], 'every POST sends a key');
      assert.equal(s.seen[2]!.headers['idempotency-key'], 'v-1');
      assert.equal(s.seen[0]!.headers['idempotency-key'], undefined);
      assert.equal(s.seen[3]!.headers['idempotency-key'], undefined);
    } finally {
      await s.close();
    }
  });

  test('list sends every filter (metadata as deepObject) on every page and walks the cursor', async () => {
    const s = await stub([
      { status: 200, body: { object: 'list', data: [cp('cp_03', 'verified'), cp('cp_02', 'verified')], has_more: true, next_cursor: 'c1' } },
      { status: 200, body: { object: 'list', data: [cp('cp_01', 'verified')], has_more: false, next_cursor: null } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const ids: string[] = [];
      for await (const c of client.counterparties.list({
        verification_status: 'verified',
        metadata: { region: 'east', 'order id': 'A&B' },
        created_after: '2026-01-01',
        created_before: '2026-02-01T00:00:00Z',
        limit: 2,
      })) {
        ids.push(c.id);
      }
      assert.deepEqual(ids, ['cp_03', 'cp_02', 'cp_01']);
      const first =
        '/v1/counterparties?verification_status=verified&metadata%5Bregion%5D=east&metadata%5Border+id%5D=A%26B' +
        '&created_after=2026-01-01&created_before=2026-02-01T00%3A00%3A00Z&limit=2';
      assert.equal(s.seen[0]!.url, first);
      assert.equal(s.seen[1]!.url, `${first}&cursor=c1`, 'the filters travel with the next page');
    } finally {
      await s.close();
    }
  });

  test('501 not_implemented (a route this build does not serve) is an InternalServerError, never retried even with x-should-retry: true', async () => {
    const s = await stub([
      { status: 501, headers: { 'x-should-retry': 'true' }, body: { ...err('not_implemented', 'this route is not served by this build'), resource_id: 'cp_01' } },
      { status: 200, body: cp('cp_01', 'pending') },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url, maxRetries: 3 });
      await assert.rejects(client.counterparties.verify('cp_01'), (e: unknown) => {
        assert.ok(e instanceof InternalServerError);
        assert.equal(e.status, 501);
        assert.equal(e.code, 'not_implemented');
        assert.equal(e.resourceId, 'cp_01');
        assert.equal(e.attempts, 1);
        return true;
      });
      assert.equal(s.seen.length, 1, 'not retried');
      assert.equal(shouldRetry({ status: 501, headers: new Headers({ 'x-should-retry': 'true' }) }), false);
      assert.equal(shouldRetry({ status: 502, headers: new Headers() }), true, 'other 5xx still are');
      assert.equal(errorClassForStatus(501), InternalServerError);
    } finally {
      await s.close();
    }
  });

  test('invalid_state is a ConflictError, counterparty_not_verified an UnprocessableEntityError, not retried', async () => {
    const s = await stub([
      { status: 409, headers: { 'x-should-retry': 'false' }, body: { ...err('invalid_state', 'a prenote for this counterparty is already pending'), resource_id: 'cp_01' } },
      { status: 422, headers: { 'x-should-retry': 'false' }, body: { ...err('counterparty_not_verified'), param: 'counterparty_id', resource_id: 'cp_01' } },
      { status: 404, headers: { 'x-should-retry': 'false' }, body: err('not_found') },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      await assert.rejects(client.counterparties.verify('cp_01'), (e: unknown) => {
        assert.ok(e instanceof ConflictError);
        assert.equal(e.code, 'invalid_state');
        return true;
      });
      await assert.rejects(client.payments.create({ virtual_account_id: 'va_01', amount: 100, rail: 'rtp', counterparty_id: 'cp_01' }), (e: unknown) => {
        assert.ok(e instanceof UnprocessableEntityError);
        assert.equal(e.code, 'counterparty_not_verified');
        assert.equal(e.param, 'counterparty_id');
        assert.equal(e.resourceId, 'cp_01');
        return true;
      });
      await assert.rejects(client.counterparties.retrieve('cp_gone'), NotFoundError);
      assert.equal(s.seen.length, 3, 'none was retried');
    } finally {
      await s.close();
    }
  });

  test('payments.create sends counterparty_id instead of destination; the payment shows it', async () => {
    const s = await stub([
      { status: 201, body: { ...payment, counterparty_id: 'cp_01', destination: { account_number: '987654321', routing_number: '021000021', name: 'Initech LLC' } } },
    ]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const p = await client.payments.create({ virtual_account_id: 'va_01', amount: 100, rail: 'rtp', counterparty_id: 'cp_01' }, { idempotencyKey: 'pay-cp-1' });
      assert.equal(p.counterparty_id, 'cp_01');
      assert.equal(p.destination.account_number, '987654321');
      assert.deepEqual(JSON.parse(s.seen[0]!.body), { virtual_account_id: 'va_01', amount: 100, rail: 'rtp', counterparty_id: 'cp_01', idempotency_key: 'pay-cp-1' });
    } finally {
      await s.close();
    }
  });

  test('settings carry require_verified_counterparty', async () => {
    const s = await stub([{ status: 200, body: { object: 'platform_settings', require_verified_counterparty: true } }]);
    try {
      const client = new Treasury({ apiKey: 'k', baseURL: s.url });
      const st = await client.platform.settings.update({ require_verified_counterparty: true });
      assert.equal(st.require_verified_counterparty, true);
      assert.equal(s.seen[0]!.method, 'PATCH');
      assert.deepEqual(JSON.parse(s.seen[0]!.body), { require_verified_counterparty: true });
    } finally {
      await s.close();
    }
  });
});

describe('webhook verification (unit)', () => {
  const secret = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');
  const other = 'whsec_' + Buffer.from('another secret of thirty-two byt').toString('base64');
  const body = JSON.stringify({ id: 'evt_1', object: 'event', type: 'webhook.test', data: { object: {} } });

  test('a signed body verifies and returns the event; any case of header names', () => {
    const h = Treasury.webhooks.sign(body, secret, { id: 'msg_1' });
    const event = Treasury.webhooks.verify(body, h, secret);
    assert.equal(event.id, 'evt_1');
    const upper = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toUpperCase(), v]));
    assert.equal(Treasury.webhooks.verify(Buffer.from(body), upper, secret).type, 'webhook.test');
    assert.equal(Treasury.webhooks.verify(body, new Headers(h), secret).id, 'evt_1');
  });

  test('several signatures (a rotation): any match passes', () => {
    const a = Treasury.webhooks.sign(body, other, { id: 'msg_1', timestamp: 1_700_000_000 });
    const b = Treasury.webhooks.sign(body, secret, { id: 'msg_1', timestamp: 1_700_000_000 });
    const h = { ...b, 'webhook-signature': `${a['webhook-signature']} ${b['webhook-signature']}` };
    assert.ok(Treasury.webhooks.verify(body, h, secret, { now: 1_700_000_010 }));
    assert.ok(Treasury.webhooks.verify(body, h, other, { now: 1_700_000_010 }));
    assert.ok(Treasury.webhooks.verify(body, b, [other, secret], { now: 1_700_000_010 }));
  });

  test('tampering, a wrong secret, a stale or future timestamp, missing headers: rejected', () => {
    const h = Treasury.webhooks.sign(body, secret);
    const rejects = (fn: () => unknown) => assert.throws(fn, WebhookVerificationError);
    rejects(() => Treasury.webhooks.verify(body.replace('webhook.test', 'payment.completed'), h, secret));
    rejects(() => Treasury.webhooks.verify(body, h, other));
    rejects(() => Treasury.webhooks.verify(body, { ...h, 'webhook-id': 'msg_2' }, secret));
    rejects(() => Treasury.webhooks.verify(body, { ...h, 'webhook-signature': 'v2,' + h['webhook-signature'].slice(3) }, secret));
    const now = Number(h['webhook-timestamp']);
    rejects(() => Treasury.webhooks.verify(body, h, secret, { now: now + 301 }));
    rejects(() => Treasury.webhooks.verify(body, h, secret, { now: now - 301 }));
    assert.ok(Treasury.webhooks.verify(body, h, secret, { now: now + 299 }));
    rejects(() => Treasury.webhooks.verify(body, { 'webhook-id': 'msg_1' }, secret));
    assert.throws(() => Treasury.webhooks.verify(JSON.parse(body), h, secret), TypeError);
  });
});

describe('packaging', () => {
  test('the package entry point (by its name) exports the client, its errors and the version', async () => {
    const name = '@opentreasury/treasury';
    const pkg = await import(name);
    assert.equal(typeof pkg.default, 'function');
    assert.equal(pkg.default, pkg.Treasury);
    assert.equal(typeof pkg.Treasury.webhooks.verify, 'function');
    for (const cls of [
      'APIError',
      'BadRequestError',
      'AuthenticationError',
      'PermissionDeniedError',
      'NotFoundError',
      'ConflictError',
      'UnprocessableEntityError',
      'RateLimitError',
      'InternalServerError',
    ]) {
      assert.equal(typeof pkg[cls], 'function', cls);
      assert.equal(pkg.Treasury[cls], pkg[cls], `Treasury.${cls}`);
    }
    const { readFileSync } = await import('node:fs');
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    assert.equal(pkg.VERSION, manifest.version);
    assert.equal(manifest.version, '1.4.2');
  });

  test('a client needs a key; the base URL defaults and loses its trailing slash', () => {
    const saved = process.env['TREASURY_API_KEY'];
    delete process.env['TREASURY_API_KEY'];
    try {
      assert.throws(() => new Treasury({ baseURL: 'http://x/v1' }), TypeError);
    } finally {
      if (saved !== undefined) process.env['TREASURY_API_KEY'] = saved;
    }
    const c = new Treasury({ apiKey: 'k', baseURL: 'http://127.0.0.1:8080/v1/' });
    assert.equal(c.baseURL, 'http://127.0.0.1:8080/v1');
    assert.equal(c.buildURL('/payments', { limit: 2, cursor: undefined, created_after: new Date(0) }), 'http://127.0.0.1:8080/v1/payments?limit=2&created_after=1970-01-01T00%3A00%3A00.000Z');
  });
});
