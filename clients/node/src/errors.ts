/**
 * Errors thrown by the client.
 *
 * Every answer of the API with a status of 400 or more becomes an {@link APIError}, of the subclass of
 * its status (API.md §2, §11):
 *
 * | status | class |
 * |---|---|
 * | 400 | {@link BadRequestError} |
 * | 401 | {@link AuthenticationError} |
 * | 403 | {@link PermissionDeniedError} |
 * | 404 | {@link NotFoundError} |
 * | 409 | {@link ConflictError} |
 * | 422 | {@link UnprocessableEntityError} |
 * | 429 | {@link RateLimitError} |
 * | 5xx | {@link InternalServerError} |
 * | others (e.g. 413) | {@link APIError} |
 *
 * A request that got no answer at all throws {@link APIConnectionError} (or its subclass
 * {@link APIConnectionTimeoutError}), also an `APIError`, with `status` undefined.
 *
 * @module
 */

import type { ErrorBody } from './models.js';

/** The base class of every error this package throws on purpose. */
export class TreasuryError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** An error answer of the API (or a request that got no answer: see {@link APIConnectionError}). */
export class APIError extends TreasuryError {
  /** The HTTP status; `undefined` when no answer came. */
  readonly status: number | undefined;
  /** The stable machine-readable code of the answer's body (e.g. `insufficient_funds`). */
  readonly code: string | undefined;
  /** The request field at fault, as a dotted path (for `invalid_request`), when one field is to blame. */
  readonly param: string | undefined;
  /** The request's `X-Request-Id`; quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** The resource the error refers to, e.g. the payment an idempotency key already created. */
  readonly resourceId: string | undefined;
  /** The answer's headers (empty when no answer came). */
  readonly headers: Headers;
  /** The answer's body, parsed when it was JSON. */
  readonly body: ErrorBody | unknown;
  /** How many attempts the call made before this error (1 when it was not retried). */
  attempts = 1;

  constructor(
    status: number | undefined,
    body: unknown,
    message: string | undefined,
    headers: Headers | undefined,
    options?: { cause?: unknown },
  ) {
    const b = (body && typeof body === 'object' ? body : {}) as Partial<ErrorBody>;
    const msg = message ?? b.message ?? (status ? `HTTP ${status}` : 'request failed');
    super(status ? `${status} ${b.code ?? 'error'}: ${msg}` : msg, options);
    this.status = status;
    this.code = typeof b.code === 'string' ? b.code : undefined;
    this.param = typeof b.param === 'string' ? b.param : undefined;
    this.requestId =
      (typeof b.request_id === 'string' ? b.request_id : undefined) ?? headers?.get('x-request-id') ?? undefined;
    this.resourceId = typeof b.resource_id === 'string' ? b.resource_id : undefined;
    this.headers = headers ?? new Headers();
    this.body = body;
  }

  /** Builds the error of the class that matches `status`. */
  static generate(status: number, body: unknown, headers: Headers): APIError {
    const Class = errorClassForStatus(status);
    return new Class(status, body, undefined, headers);
  }
}

/** 400: the request is malformed (`invalid_request` with `param`, `unbalanced_entry`, `amount_exceeds_rail_limit`), or a webhook replay's window holds more than 10,000 events (`replay_too_large`). */
export class BadRequestError extends APIError {}
/** 401: the key is missing, malformed, unknown, revoked or expired. */
export class AuthenticationError extends APIError {}
/** 403: the key may not call this route (e.g. a platform key on an operator route, a live key on a simulation). */
export class PermissionDeniedError extends APIError {}
/** 404: no such object (or one of another platform or environment). */
export class NotFoundError extends APIError {}
/** 409: a conflict with the object's state or with an idempotency key (`idempotency_conflict`, `payment_not_cancelable`, …). */
export class ConflictError extends APIError {}
/** 422: a business rule refused the request (`insufficient_funds`, `kyb_not_approved`, `compliance_rejected`, `counterparty_not_verified`, …). */
export class UnprocessableEntityError extends APIError {}
/** 429: over the rate limit; the client already retried after `Retry-After` as many times as allowed. */
export class RateLimitError extends APIError {
  /** The answer's `Retry-After`, in seconds, if it had one. */
  get retryAfter(): number | undefined {
    const v = this.headers.get('retry-after');
    const n = v === null ? NaN : Number(v);
    return Number.isFinite(n) ? n : undefined;
  }
}
/** 500 or another 5xx: a fault of the service (`internal_error`, `unavailable`), or 501 `not_implemented` (the route is not served by this build; never retried). */
export class InternalServerError extends APIError {}

/** No answer came: the connection failed or was cut. */
export class APIConnectionError extends APIError {
  constructor(message = 'Connection error.', options?: { cause?: unknown }) {
    super(undefined, undefined, message, undefined, options);
  }
}

/** No answer came within the client's `timeout`. */
export class APIConnectionTimeoutError extends APIConnectionError {
  constructor(message = 'Request timed out.', options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A webhook delivery failed verification (bad or missing signature, stale timestamp, malformed body). */
export class WebhookVerificationError extends TreasuryError {}

/** The {@link APIError} subclass for an HTTP status. */
export function errorClassForStatus(status: number): typeof APIError {
  switch (status) {
    case 400:
      return BadRequestError;
    case 401:
      return AuthenticationError;
    case 403:
      return PermissionDeniedError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 422:
      return UnprocessableEntityError;
    case 429:
      return RateLimitError;
    default:
      return status >= 500 ? InternalServerError : APIError;
  }
}
