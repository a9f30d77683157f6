/**
 * `@opentreasury/treasury`: the Node.js client of the Treasury API.
 *
 * ```ts
 * import Treasury from '@opentreasury/treasury';
 *
 * const client = new Treasury({ apiKey: process.env.TREASURY_API_KEY, baseURL: 'http://localhost:8080/v1' });
 * const account = await client.virtualAccounts.create({ platform_id, entity_ref: 'biz_1', type: 'checking' });
 * for await (const payment of client.payments.list({ virtual_account_id: account.id })) console.log(payment.id);
 * ```
 *
 * @packageDocumentation
 */

import { APIClient, type ClientOptions } from './core.js';
import * as Errors from './errors.js';
import {
  BookTransfers,
  Counterparties,
  CurrentPlatform,
  Events,
  KYB,
  Ledger,
  Operator,
  Payments,
  Platforms,
  Simulations,
  VirtualAccounts,
  Webhooks,
} from './resources.js';
import { webhooks as webhookHelpers } from './webhooks.js';

/**
 * A client of the Treasury API, for one key: a platform key (`sk_sandbox_…`, `sk_live_…`) for
 * everything but the operator's routes, or the operator key for {@link Treasury.platforms} and
 * {@link Treasury.operator}.
 */
export class Treasury extends APIClient {
  /** Webhook signature helpers: `Treasury.webhooks.verify(rawBody, headers, secret)` → the event, or throws. */
  static readonly webhooks = webhookHelpers;

  static readonly TreasuryError = Errors.TreasuryError;
  static readonly APIError = Errors.APIError;
  static readonly BadRequestError = Errors.BadRequestError;
  static readonly AuthenticationError = Errors.AuthenticationError;
  static readonly PermissionDeniedError = Errors.PermissionDeniedError;
  static readonly NotFoundError = Errors.NotFoundError;
  static readonly ConflictError = Errors.ConflictError;
  static readonly UnprocessableEntityError = Errors.UnprocessableEntityError;
  static readonly RateLimitError = Errors.RateLimitError;
  static readonly InternalServerError = Errors.InternalServerError;
  static readonly APIConnectionError = Errors.APIConnectionError;
  static readonly APIConnectionTimeoutError = Errors.APIConnectionTimeoutError;
  static readonly WebhookVerificationError = Errors.WebhookVerificationError;

  /** Platforms, as the operator manages them (operator key). */
  readonly platforms: Platforms;
  /** The operator's other routes: KYB decisions, live ACH files (operator key). */
  readonly operator: Operator;
  /** The caller's platform: `retrieve`, `settings`, `apiKeys`, `revenueShare`. */
  readonly platform: CurrentPlatform;
  /** Virtual accounts, with `transactions`, `balance`, `statements`, `freeze`/`unfreeze`/`close`. */
  readonly virtualAccounts: VirtualAccounts;
  /** Payments (to a `destination` or a `counterparty_id`; created now or `scheduled_for` a date), with `cancel`, and `approve`/`deny` for those awaiting an approval. */
  readonly payments: Payments;
  /** Book transfers between two of the platform's virtual accounts: `create`, `retrieve`, `list`. */
  readonly bookTransfers: BookTransfers;
  /** Counterparties (saved bank accounts, paid by `counterparty_id`): `create`, `retrieve`, `list`, `delete`, `verify` (prenote). */
  readonly counterparties: Counterparties;
  /** KYB verifications. */
  readonly kyb: KYB;
  /** The ledger: `accounts`, `entries`, `journalEntries` (`list`, `retrieve`), `exports`. */
  readonly ledger: Ledger;
  /** Webhook endpoints, with `deliveries`, `rotateSecret`, `test`, `replay` (past events sent again). */
  readonly webhooks: Webhooks;
  /** Events. */
  readonly events: Events;
  /** Sandbox simulations: `inboundTransfers`, `kyb`, `payments` (`complete`, `fail`, `release`). */
  readonly simulations: Simulations;

  /**
   * @param options `apiKey` (default `TREASURY_API_KEY`), `baseURL` (default `TREASURY_BASE_URL`,
   *   else `http://localhost:8080/v1`), `maxRetries` (2), `timeout` (60 000 ms), `defaultHeaders`, `fetch`.
   */
  constructor(options: ClientOptions = {}) {
    super(options);
    this.platforms = new Platforms(this);
    this.operator = new Operator(this);
    this.platform = new CurrentPlatform(this);
    this.virtualAccounts = new VirtualAccounts(this);
    this.payments = new Payments(this);
    this.bookTransfers = new BookTransfers(this);
    this.counterparties = new Counterparties(this);
    this.kyb = new KYB(this);
    this.ledger = new Ledger(this);
    this.webhooks = new Webhooks(this);
    this.events = new Events(this);
    this.simulations = new Simulations(this);
  }
}

export default Treasury;

export {
  APIClient,
  PagePromise,
  VERSION,
  backoff,
  retryDelay,
  shouldRetry,
  type ClientOptions,
  type Fetch,
  type Page,
  type RequestOptions,
  type ResponseInfo,
  type WithResponse,
} from './core.js';
export {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  TreasuryError,
  UnprocessableEntityError,
  WebhookVerificationError,
  errorClassForStatus,
} from './errors.js';
export { DEFAULT_TOLERANCE_SECONDS, sign, verify, type VerifyOptions, type WebhookHeaders } from './webhooks.js';
export * from './resources.js';
export type * from './models.js';
