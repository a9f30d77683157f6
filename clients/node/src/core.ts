/**
 * The HTTP machinery shared by every resource: authentication, idempotency keys, retries with
 * backoff, error mapping and pagination. Node's global `fetch` only.
 *
 * @module
 */

import { randomUUID } from 'node:crypto';
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
} from './errors.js';

/** The package's version, sent in `User-Agent`. */
export const VERSION = '1.4.2';

/** The `fetch` function the client calls; defaults to Node's global `fetch`. */
export type Fetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/** Options of a {@link Treasury} client. */
export interface ClientOptions {
  /**
   * The API key sent as `Authorization: Bearer <apiKey>`: a platform key (`sk_sandbox_…`,
   * `sk_live_…`) or the operator key. Defaults to the environment variable `TREASURY_API_KEY`.
   */
  apiKey?: string | undefined;
  /**
   * The API's base URL, ending in `/v1`. Defaults to `TREASURY_BASE_URL`, else
   * `http://localhost:8080/v1`.
   */
  baseURL?: string | undefined;
  /**
   * How many times a failed request is retried (connection errors, 408, 429, 409
   * `idempotency_in_progress`, 5xx, or whatever the server's `x-should-retry` says; never a 501). Default 2.
   */
  maxRetries?: number | undefined;
  /** Milliseconds to wait for each attempt's answer before giving up on it. Default 60 000. */
  timeout?: number | undefined;
  /** Headers sent with every request. */
  defaultHeaders?: Record<string, string> | undefined;
  /** A `fetch` to use instead of the global one (e.g. to add a proxy or record requests). */
  fetch?: Fetch | undefined;
}

/** Options of a single call, given as the last argument of every method. */
export interface RequestOptions {
  /**
   * The `Idempotency-Key` of a `POST`. Without it the client sends the body's `idempotency_key`
   * if it has one, else a random UUID; either way the same key on each of its own retries.
   */
  idempotencyKey?: string | undefined;
  /** Overrides the client's `maxRetries` for this call. */
  maxRetries?: number | undefined;
  /** Overrides the client's `timeout` (milliseconds) for this call. */
  timeout?: number | undefined;
  /** Your own `X-Request-Id` (1 to 64 characters of `A-Z a-z 0-9 . _ : -`), echoed in the answer and in errors. */
  requestId?: string | undefined;
  /** Extra headers for this call. */
  headers?: Record<string, string> | undefined;
  /** Aborts the call (and its retries). */
  signal?: AbortSignal | undefined;
}

/** What the client knows of the HTTP answer a result came from. */
export interface ResponseInfo {
  /** The HTTP status of the final attempt. */
  status: number;
  /** Its headers. */
  headers: Headers;
  /** Its `X-Request-Id`. */
  requestId: string | null;
  /** `true` when the answer replays an earlier request with the same `Idempotency-Key` (`Idempotent-Replayed: true`). */
  idempotentReplayed: boolean;
  /** The `Idempotency-Key` the client sent (POST only). */
  idempotencyKey: string | null;
  /** How many attempts the call took (1 when it was not retried). */
  attempts: number;
}

/**
 * A result, with the HTTP answer it came from in the non-enumerable property `lastResponse` (left
 * out of `JSON.stringify` and of `Object.keys`).
 */
export type WithResponse<T> = T & { readonly lastResponse: ResponseInfo };

/** One page of a list. */
export interface Page<T> {
  object: 'list';
  /** The page's items. */
  data: T[];
  /** Whether more items follow this page. */
  has_more: boolean;
  /** Pass as `cursor` to get the next page; null on the last page. */
  next_cursor: string | null;
}

/** Query values the client can encode. */
export type QueryValue = string | number | boolean | Date | null | undefined | Record<string, string | number | boolean>;

interface InternalRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: object | undefined;
  body?: unknown;
  options?: RequestOptions | undefined;
  /** Parse the answer as text (CSV) rather than JSON. */
  text?: boolean;
}

const INITIAL_RETRY_DELAY = 500; // ms
const MAX_RETRY_DELAY = 8_000; // ms
const MAX_RETRY_AFTER = 60_000; // ms: a longer Retry-After is not waited for; the error is thrown.

/** The HTTP client under the resources. Use {@link Treasury}, which extends it. */
export class APIClient {
  /** The key sent as `Authorization: Bearer`. */
  readonly apiKey: string;
  /** The base URL, without a trailing slash. */
  readonly baseURL: string;
  /** Retries of a failed request. */
  readonly maxRetries: number;
  /** Milliseconds per attempt. */
  readonly timeout: number;
  readonly #defaultHeaders: Record<string, string>;
  readonly #fetch: Fetch;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? process.env['TREASURY_API_KEY'];
    if (!apiKey) {
      throw new TypeError('Treasury: no API key: pass { apiKey } or set TREASURY_API_KEY');
    }
    this.apiKey = apiKey;
    this.baseURL = (options.baseURL ?? process.env['TREASURY_BASE_URL'] ?? 'http://localhost:8080/v1').replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 2;
    this.timeout = options.timeout ?? 60_000;
    this.#defaultHeaders = { ...(options.defaultHeaders ?? {}) };
    const f = options.fetch ?? (globalThis.fetch as Fetch | undefined);
    if (!f) throw new TypeError('Treasury: no global fetch (Node >= 18 is required) and no { fetch } option');
    this.#fetch = f;
  }

  /** `GET path` → the parsed JSON. */
  get<T>(path: string, query?: object, options?: RequestOptions): Promise<WithResponse<T>> {
    return this.request<T>({ method: 'GET', path, query, options });
  }
  /** `POST path` with a JSON body (none when `body` is undefined). Always sends an `Idempotency-Key`. */
  post<T>(path: string, body?: unknown, options?: RequestOptions): Promise<WithResponse<T>> {
    return this.request<T>({ method: 'POST', path, body, options });
  }
  /** `PATCH path` with a JSON body. */
  patch<T>(path: string, body: unknown, options?: RequestOptions): Promise<WithResponse<T>> {
    return this.request<T>({ method: 'PATCH', path, body, options });
  }
  /** `DELETE path`. */
  delete<T>(path: string, options?: RequestOptions): Promise<WithResponse<T>> {
    return this.request<T>({ method: 'DELETE', path, options });
  }
  /** `GET path` → the answer's text (for `text/csv` routes). */
  getText(path: string, query?: object, options?: RequestOptions): Promise<string> {
    return this.request<string>({ method: 'GET', path, query, options, text: true }) as Promise<string>;
  }

  /** A list that walks every page from `path` (see {@link PagePromise}). */
  list<T>(path: string, query?: object, options?: RequestOptions): PagePromise<T> {
    const base = { ...(query ?? {}) } as Record<string, unknown>;
    return new PagePromise<T>((cursor) =>
      this.get<Page<T>>(path, cursor === undefined ? base : { ...base, cursor }, options),
    );
  }

  /** Sends a request, retrying as API.md §11 says, and returns the parsed answer or throws an {@link APIError}. */
  async request<T>(req: InternalRequest): Promise<WithResponse<T>> {
    const opts = req.options ?? {};
    const url = this.buildURL(req.path, req.query);
    const headers: Record<string, string> = {
      Accept: req.text ? 'text/csv, application/json' : 'application/json',
      Authorization: `Bearer ${this.apiKey}`,
      'User-Agent': `opentreasury-node/${VERSION} node/${process.versions.node}`,
      ...this.#defaultHeaders,
      ...(opts.headers ?? {}),
    };
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['Content-Type'] = 'application/json';
    }
    let idempotencyKey: string | null = null;
    if (req.method === 'POST') {
      const fromBody =
        req.body && typeof req.body === 'object' && typeof (req.body as { idempotency_key?: unknown }).idempotency_key === 'string'
          ? (req.body as { idempotency_key: string }).idempotency_key
          : undefined;
      idempotencyKey = opts.idempotencyKey ?? fromBody ?? randomUUID();
      headers['Idempotency-Key'] = idempotencyKey;
    }
    if (opts.requestId) headers['X-Request-Id'] = opts.requestId;

    const maxRetries = Math.max(0, opts.maxRetries ?? this.maxRetries);
    const timeout = opts.timeout ?? this.timeout;

    for (let attempt = 1; ; attempt++) {
      const retriesLeft = maxRetries - (attempt - 1);
      let response: Response;
      let raw: string;
      const signal = withTimeout(opts.signal, timeout);
      try {
        response = await this.#fetch(url, { method: req.method, headers, body: body ?? null, signal });
        raw = await response.text();
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
        if (retriesLeft > 0) {
          await sleep(backoff(attempt), opts.signal);
          continue;
        }
        const error = timedOut
          ? new APIConnectionTimeoutError(undefined, { cause: err })
          : new APIConnectionError(`Connection error: ${(err as Error)?.message ?? String(err)}`, { cause: err });
        error.attempts = attempt;
        throw error;
      }

      const info: ResponseInfo = {
        status: response.status,
        headers: response.headers,
        requestId: response.headers.get('x-request-id'),
        idempotentReplayed: response.headers.get('idempotent-replayed') === 'true',
        idempotencyKey,
        attempts: attempt,
      };

      if (response.ok) {
        if (req.text) return raw as unknown as WithResponse<T>;
        return attachResponse(raw === '' ? {} : JSON.parse(raw), info) as WithResponse<T>;
      }

      let errorBody: unknown = raw;
      try {
        errorBody = JSON.parse(raw);
      } catch {
        // not JSON: keep the text
      }
      const code =
        errorBody && typeof errorBody === 'object' ? (errorBody as { code?: unknown }).code : undefined;
      if (retriesLeft > 0 && shouldRetry(response, typeof code === 'string' ? code : undefined)) {
        const wait = retryDelay(attempt, response.headers);
        if (wait !== null) {
          await sleep(wait, opts.signal);
          continue;
        }
      }
      const error = APIError.generate(response.status, errorBody, response.headers);
      error.attempts = attempt;
      throw error;
    }
  }

  /**
   * The absolute URL of `path` with `query` encoded (undefined and null values left out; a Date as
   * ISO 8601; an object, such as a `metadata` filter, as `name[key]=value` pairs).
   */
  buildURL(path: string, query?: object): string {
    const url = new URL(this.baseURL + (path.startsWith('/') ? path : `/${path}`));
    for (const [key, value] of Object.entries((query ?? {}) as Record<string, QueryValue>)) {
      if (value === undefined || value === null) continue;
      if (value instanceof Date) {
        url.searchParams.append(key, value.toISOString());
      } else if (typeof value === 'object') {
        // deepObject (e.g. `metadata`): each pair as `key[k]=v`, key and value URL-encoded; an
        // empty map sends nothing (a bare `metadata=` is 400).
        for (const [k, v] of Object.entries(value)) {
          if (v === undefined || v === null) continue;
          url.searchParams.append(`${key}[${k}]`, String(v));
        }
      } else {
        url.searchParams.append(key, String(value));
      }
    }
    return url.toString();
  }
}

/**
 * Whether an error answer should be retried: never a 501 (`not_implemented`); otherwise the
 * server's `x-should-retry` decides when it is present; otherwise 408, 429, 409
 * `idempotency_in_progress` and 5xx are retried.
 */
export function shouldRetry(response: { status: number; headers: Headers }, code?: string): boolean {
  // 501 (`not_implemented`: the route is not served by this build) meets the same answer every
  // time: never retried, even if the server's `x-should-retry` says `true`.
  if (response.status === 501) return false;
  const header = response.headers.get('x-should-retry');
  if (header === 'true') return true;
  if (header === 'false') return false;
  const s = response.status;
  return s === 408 || s === 429 || (s === 409 && code === 'idempotency_in_progress') || s >= 500;
}

/** Exponential backoff before retry number `attempt` (1-based): 0.5 s, 1 s, 2 s … capped at 8 s, less up to 25 % jitter. */
export function backoff(attempt: number): number {
  const base = Math.min(INITIAL_RETRY_DELAY * 2 ** (attempt - 1), MAX_RETRY_DELAY);
  return base * (1 - Math.random() * 0.25);
}

/**
 * Milliseconds to wait before the next attempt: the answer's `Retry-After` (seconds or an HTTP
 * date) when it has one, else {@link backoff}. `null` (do not retry) when `Retry-After` asks for
 * more than 60 seconds.
 */
export function retryDelay(attempt: number, headers: Headers): number | null {
  const value = headers.get('retry-after');
  if (value !== null && value.trim() !== '') {
    let ms = Number(value) * 1000;
    if (!Number.isFinite(ms)) {
      const date = Date.parse(value);
      ms = Number.isNaN(date) ? NaN : date - Date.now();
    }
    if (Number.isFinite(ms)) {
      if (ms > MAX_RETRY_AFTER) return null;
      return Math.max(0, ms);
    }
  }
  return backoff(attempt);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function attachResponse<T>(value: T, info: ResponseInfo): T {
  if (value !== null && typeof value === 'object') {
    Object.defineProperty(value, 'lastResponse', { value: info, enumerable: false, configurable: true });
  }
  return value;
}

/** A signal that aborts after `ms` or when `signal` does (AbortSignal.any is not in Node 18). */
function withTimeout(signal: AbortSignal | undefined, ms: number): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  if (!signal) return timeout;
  const controller = new AbortController();
  const abort = (s: AbortSignal) => () => controller.abort(s.reason);
  if (signal.aborted) controller.abort(signal.reason);
  signal.addEventListener('abort', abort(signal), { once: true });
  timeout.addEventListener('abort', abort(timeout), { once: true });
  return controller.signal;
}

/**
 * A list call. `await` it for the first page, or iterate it with `for await` to walk every item
 * of every page (the client follows `next_cursor` while `has_more`):
 *
 * ```ts
 * for await (const payment of client.payments.list({ limit: 100 })) { … }
 * const page = await client.payments.list({ limit: 10 });     // one page
 * for await (const page of client.payments.list().pages()) { … }
 * const all = await client.payments.list().toArray();
 * ```
 */
export class PagePromise<T> implements AsyncIterable<T>, PromiseLike<WithResponse<Page<T>>> {
  readonly #fetchPage: (cursor?: string) => Promise<WithResponse<Page<T>>>;
  #first: Promise<WithResponse<Page<T>>> | undefined;

  constructor(fetchPage: (cursor?: string) => Promise<WithResponse<Page<T>>>) {
    this.#fetchPage = fetchPage;
  }

  /** The first page (fetched once, on first use). */
  firstPage(): Promise<WithResponse<Page<T>>> {
    this.#first ??= this.#fetchPage();
    return this.#first;
  }

  then<R1 = WithResponse<Page<T>>, R2 = never>(
    onfulfilled?: ((value: WithResponse<Page<T>>) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.firstPage().then(onfulfilled, onrejected);
  }

  /** Every page, from the first, following `next_cursor` while `has_more`. */
  async *pages(): AsyncGenerator<WithResponse<Page<T>>, void, undefined> {
    let page = await this.firstPage();
    yield page;
    while (page.has_more && page.next_cursor) {
      page = await this.#fetchPage(page.next_cursor);
      yield page;
    }
  }

  /** Every item of every page. */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) {
      yield* page.data;
    }
  }

  /** Every item of every page in one array (at most `max` items, if given). */
  async toArray(max = Infinity): Promise<T[]> {
    const out: T[] = [];
    for await (const item of this) {
      if (out.length >= max) break;
      out.push(item);
    }
    return out;
  }
}
