/**
 * Verifying webhook deliveries (API.md §8, the Standard Webhooks scheme).
 *
 * Each delivery is a `POST` whose body is the event, with the headers
 * - `webhook-id`: the delivery id (`msg_…`), the same on every attempt;
 * - `webhook-timestamp`: the Unix time in seconds of this attempt;
 * - `webhook-signature`: space-separated `v1,<base64>` entries, where each base64 is
 *   HMAC-SHA256(secret bytes, `<webhook-id>.<webhook-timestamp>.<raw body>`); during a secret
 *   rotation there is one entry per secret.
 *
 * The secret is the endpoint's `secret`, `whsec_` followed by the base64 of the key bytes.
 *
 * @module
 */

import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './errors.js';
import type { Event } from './models.js';

/** Header values as Node's `IncomingMessage.headers`, a fetch `Headers`, or any plain object (any case). */
export type WebhookHeaders =
  | Headers
  | Record<string, string | string[] | undefined>
  | { get(name: string): string | null };

/** Options of {@link verify}. */
export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now, in seconds. Default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The current time, Unix seconds (for tests). Default: now. */
  now?: number;
}

/** The default timestamp tolerance, seconds. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * Verifies a webhook delivery and returns its event.
 *
 * Pass the body exactly as received (a string or the raw bytes, not a re-serialised object): the
 * signature covers those bytes. Accepts a delivery if any `v1` signature of `webhook-signature`
 * matches any of the given secrets (several during a rotation), compared in constant time, and if
 * `webhook-timestamp` is within the tolerance of now.
 *
 * ```ts
 * http.createServer((req, res) => {
 *   const chunks: Buffer[] = [];
 *   req.on('data', (c) => chunks.push(c)).on('end', () => {
 *     try {
 *       const event = Treasury.webhooks.verify(Buffer.concat(chunks), req.headers, process.env.WEBHOOK_SECRET!);
 *       res.writeHead(200).end();
 *     } catch (err) {
 *       res.writeHead(400).end();
 *     }
 *   });
 * });
 * ```
 *
 * @param rawBody The request body, unparsed.
 * @param headers The request headers.
 * @param secret The endpoint's secret (`whsec_…`), or several.
 * @throws {@link WebhookVerificationError} when a header is missing, the timestamp is out of
 *   tolerance, no signature matches, or the body is not a JSON event.
 */
export function verify(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | readonly string[],
  options: VerifyOptions = {},
): Event {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new TypeError('webhooks.verify: pass the raw body (a string or Buffer), not a parsed object');
  }
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) {
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  }
  if (!/^\d+$/.test(timestamp)) {
    throw new WebhookVerificationError('malformed webhook-timestamp');
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const ts = Number(timestamp);
  if (Math.abs(now - ts) > tolerance) {
    throw new WebhookVerificationError(`webhook-timestamp ${ts} is more than ${tolerance} s from now (${now})`);
  }

  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0) throw new TypeError('webhooks.verify: no secret');
  const expected = secrets.map((s) => hmac(secretBytes(s), id, timestamp, body));

  let matched = false;
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    let given: Buffer;
    try {
      given = Buffer.from(entry.slice(comma + 1), 'base64');
    } catch {
      continue;
    }
    for (const want of expected) {
      // Every candidate is compared (no early exit), each in constant time.
      if (given.length === want.length && timingSafeEqual(given, want)) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError('no matching v1 signature in webhook-signature');

  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new WebhookVerificationError('the body is not JSON', { cause: err });
  }
  if (!event || typeof event !== 'object' || Array.isArray(event)) {
    throw new WebhookVerificationError('the body is not an event object');
  }
  return event as Event;
}

/**
 * Signs a body as the service does, and returns the three headers of a delivery. For tests of your
 * own webhook handler.
 *
 * @param rawBody The body to sign.
 * @param secret The endpoint's secret (`whsec_…`).
 * @param options `id` (default a random `msg_…`) and `timestamp` (Unix seconds, default now).
 */
export function sign(
  rawBody: string | Uint8Array,
  secret: string,
  options: { id?: string; timestamp?: number } = {},
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const id = options.id ?? `msg_${Date.now().toString(36)}${Math.random().toString(36).slice(2)}`;
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const signature = hmac(secretBytes(secret), id, timestamp, body).toString('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

function hmac(key: Buffer, id: string, timestamp: string, body: Buffer): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

function secretBytes(secret: string): Buffer {
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const bytes = Buffer.from(b64, 'base64');
  if (bytes.length === 0) throw new TypeError('webhooks: the secret is empty or not base64');
  return bytes;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : record[key];
  }
  return Array.isArray(value) ? value.join(' ') : value;
}

/** The webhook helpers, as `Treasury.webhooks`. */
export const webhooks = { verify, sign } as const;
