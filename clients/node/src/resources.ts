/**
 * The API's resources, one class each, reached from a {@link Treasury} client
 * (`client.virtualAccounts`, `client.payments`, …). Methods are camelCase; request and response
 * bodies keep the API's snake_case field names.
 *
 * @module
 */

import { randomUUID } from 'node:crypto';
import type { APIClient, PagePromise, RequestOptions, WithResponse } from './core.js';
import type * as M from './models.js';
import { verify, type VerifyOptions, type WebhookHeaders } from './webhooks.js';

/** An API key as the one answer that creates it shows it: with its `secret`. */
export type APIKeyWithSecret = M.APIKey & { secret: string };
/** A webhook endpoint as creation and rotate-secret show it: with its `secret`. */
export type WebhookEndpointWithSecret = M.WebhookEndpoint & { secret: string };
/** The answer to approving a platform: the platform and its new sandbox key, with its secret. */
export type ApprovedPlatform = M.PlatformWithKeys & { sandbox_api_key: APIKeyWithSecret };
/** The answer to enabling live: the platform and its new live key, with its secret. */
export type LiveEnabledPlatform = M.PlatformWithKeys & { live_api_key: APIKeyWithSecret };
/** `POST /payments`: as {@link M.PaymentRequest}; `idempotency_key` may be left out: it defaults to the request's `Idempotency-Key`. */
export type PaymentCreateParams = Omit<M.PaymentRequest, 'idempotency_key'> & { idempotency_key?: string };
/** `POST /book-transfers`: as {@link M.BookTransferRequest}; `idempotency_key` may be left out: it defaults to the request's `Idempotency-Key`. */
export type BookTransferCreateParams = Omit<M.BookTransferRequest, 'idempotency_key'> & { idempotency_key?: string };

const seg = (s: string) => encodeURIComponent(s);

abstract class APIResource {
  protected readonly _client: APIClient;
  constructor(client: APIClient) {
    this._client = client;
  }
}

// ---------------------------------------------------------------------------------------------
// Operator: platforms, KYB decisions, ACH files

/** Platforms, as the operator manages them (operator key only). */
export class Platforms extends APIResource {
  /**
   * Registers a platform (`POST /platforms`): `status: pending_approval` until {@link approve}.
   * Retried safely: the same `Idempotency-Key` replays the first answer.
   */
  register(body: M.CreatePlatformRequest, options?: RequestOptions): Promise<WithResponse<M.Platform>> {
    return this._client.post('/platforms', body, options);
  }

  /** The same as {@link register}. */
  create(body: M.CreatePlatformRequest, options?: RequestOptions): Promise<WithResponse<M.Platform>> {
    return this.register(body, options);
  }

  /** Every platform, newest first (`GET /operator/platforms`). */
  list(params?: M.ListPlatformsParams, options?: RequestOptions): PagePromise<M.Platform> {
    return this._client.list('/operator/platforms', params, options);
  }

  /** One platform (`GET /operator/platforms/{id}`). */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.Platform>> {
    return this._client.get(`/operator/platforms/${seg(id)}`, undefined, options);
  }

  /**
   * Sets a platform's `revenue_share_rate`, `interest_rate`, `fee_schedule` or `rate_limit`
   * (`PATCH /operator/platforms/{id}`); only the fields given change.
   */
  update(id: string, body: M.ConfigurePlatformRequest, options?: RequestOptions): Promise<WithResponse<M.Platform>> {
    return this._client.patch(`/operator/platforms/${seg(id)}`, body, options);
  }

  /** Approves a platform; the answer carries the new sandbox key with its `secret`, shown this once. */
  approve(id: string, options?: RequestOptions): Promise<WithResponse<ApprovedPlatform>> {
    return this._client.post(`/operator/platforms/${seg(id)}/approve`, undefined, options);
  }

  /** Opens the live environment; the answer carries the first live key with its `secret`, shown this once. */
  enableLive(id: string, options?: RequestOptions): Promise<WithResponse<LiveEnabledPlatform>> {
    return this._client.post(`/operator/platforms/${seg(id)}/enable-live`, undefined, options);
  }

  /** Credits the platform's `platform_operating` ledger account (`POST /operator/platforms/{id}/fund`). */
  fund(id: string, body: M.FundPlatformRequest, options?: RequestOptions): Promise<WithResponse<M.JournalEntry>> {
    return this._client.post(`/operator/platforms/${seg(id)}/fund`, body, options);
  }
}

/** The operator's decisions on KYB verifications in `pending_review`. */
export class OperatorKYB extends APIResource {
  /** Decides a verification in `pending_review` (`POST /operator/kyb/{id}/decision`). */
  decide(id: string, body: M.KYBDecisionRequest, options?: RequestOptions): Promise<WithResponse<M.KYBVerification>> {
    return this._client.post(`/operator/kyb/${seg(id)}/decision`, body, options);
  }
}

/** Live outbound NACHA files (API.md §10). */
export class ACHFiles extends APIResource {
  /** Every ACH file, newest first (`GET /operator/rails/ach/files`). */
  list(params?: M.ListACHFilesParams, options?: RequestOptions): PagePromise<M.ACHFile> {
    return this._client.list('/operator/rails/ach/files', params, options);
  }

  /**
   * Cuts the pending live ACH payments into a file now (`POST /operator/rails/ach/files`). A server
   * without live ACH configured answers 409 `invalid_state` ({@link ConflictError}).
   */
  cut(options?: RequestOptions): Promise<WithResponse<M.ACHFileCut>> {
    return this._client.post('/operator/rails/ach/files', undefined, options);
  }
}

/** The operator's routes other than {@link Platforms}. */
export class Operator {
  /** KYB decisions. */
  readonly kyb: OperatorKYB;
  /** Live ACH files. */
  readonly achFiles: ACHFiles;
  constructor(client: APIClient) {
    this.kyb = new OperatorKYB(client);
    this.achFiles = new ACHFiles(client);
  }
}

// ---------------------------------------------------------------------------------------------
// The caller's platform

/** The caller's platform settings in the key's environment. */
export class PlatformSettingsResource extends APIResource {
  /** The settings (`GET /platform/settings`). */
  retrieve(options?: RequestOptions): Promise<WithResponse<M.PlatformSettings>> {
    return this._client.get('/platform/settings', undefined, options);
  }

  /** Changes the fields given (`PATCH /platform/settings`), e.g. `{ sandbox: { auto_settle: false } }`. */
  update(body: M.UpdateSettingsRequest, options?: RequestOptions): Promise<WithResponse<M.PlatformSettings>> {
    return this._client.patch('/platform/settings', body, options);
  }
}

/** The platform's API keys. */
export class APIKeys extends APIResource {
  /** Creates a key; the answer's `secret` is shown this once (`POST /platform/api-keys`). */
  create(body: M.CreateAPIKeyRequest, options?: RequestOptions): Promise<WithResponse<APIKeyWithSecret>> {
    return this._client.post('/platform/api-keys', body, options);
  }

  /** The keys of one environment, revoked and expired ones included, without secrets. */
  list(params?: M.ListAPIKeysParams, options?: RequestOptions): PagePromise<M.APIKey> {
    return this._client.list('/platform/api-keys', params, options);
  }

  /** Revokes a key at once (`DELETE /platform/api-keys/{id}`). */
  revoke(id: string, options?: RequestOptions): Promise<WithResponse<M.APIKey>> {
    return this._client.delete(`/platform/api-keys/${seg(id)}`, options);
  }

  /**
   * Replaces a key with a new one (`POST /platform/api-keys/{id}/roll`); the old one keeps working
   * for `grace_seconds` (default 86400).
   */
  roll(id: string, body: M.RollAPIKeyRequest = {}, options?: RequestOptions): Promise<WithResponse<APIKeyWithSecret>> {
    return this._client.post(`/platform/api-keys/${seg(id)}/roll`, body, options);
  }
}

/** The caller's own platform (any platform key). */
export class CurrentPlatform extends APIResource {
  /** Settings of the key's environment. */
  readonly settings: PlatformSettingsResource;
  /** API keys. */
  readonly apiKeys: APIKeys;

  constructor(client: APIClient) {
    super(client);
    this.settings = new PlatformSettingsResource(client);
    this.apiKeys = new APIKeys(client);
  }

  /** The caller's platform (`GET /platform`). */
  retrieve(options?: RequestOptions): Promise<WithResponse<M.Platform>> {
    return this._client.get('/platform', undefined, options);
  }

  /** The platform's share of fees and interest over `from`..`to` (`GET /platform/revenue-share`). */
  revenueShare(params: M.GetRevenueShareParams, options?: RequestOptions): Promise<WithResponse<M.RevenueShareReport>> {
    return this._client.get('/platform/revenue-share', params, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Virtual accounts

/** A virtual account's transactions. */
export class VirtualAccountTransactions extends APIResource {
  /** The account's transactions, newest first (`GET /virtual-accounts/{id}/transactions`). */
  list(
    virtualAccountId: string,
    params?: M.ListTransactionsParams,
    options?: RequestOptions,
  ): PagePromise<M.Transaction> {
    return this._client.list(`/virtual-accounts/${seg(virtualAccountId)}/transactions`, params, options);
  }
}

/** A virtual account's monthly statements. */
export class VirtualAccountStatements extends APIResource {
  /**
   * The statement of one month, `YYYY-MM` (`GET /virtual-accounts/{id}/statements/{month}`): a
   * {@link M.Statement}, or with `{ format: 'csv' }` the CSV text.
   */
  retrieve(
    virtualAccountId: string,
    month: string,
    params?: { format?: 'json' },
    options?: RequestOptions,
  ): Promise<WithResponse<M.Statement>>;
  retrieve(virtualAccountId: string, month: string, params: { format: 'csv' }, options?: RequestOptions): Promise<string>;
  retrieve(
    virtualAccountId: string,
    month: string,
    params?: M.GetStatementParams,
    options?: RequestOptions,
  ): Promise<WithResponse<M.Statement> | string> {
    const path = `/virtual-accounts/${seg(virtualAccountId)}/statements/${seg(month)}`;
    if (params?.format === 'csv') return this._client.getText(path, params, options);
    return this._client.get(path, params, options);
  }
}

/** Virtual accounts. */
export class VirtualAccounts extends APIResource {
  /** Transactions of an account. */
  readonly transactions: VirtualAccountTransactions;
  /** Monthly statements of an account. */
  readonly statements: VirtualAccountStatements;

  constructor(client: APIClient) {
    super(client);
    this.transactions = new VirtualAccountTransactions(client);
    this.statements = new VirtualAccountStatements(client);
  }

  /** Opens an account for a business (`POST /virtual-accounts`). */
  create(body: M.CreateVirtualAccountRequest, options?: RequestOptions): Promise<WithResponse<M.VirtualAccount>> {
    return this._client.post('/virtual-accounts', body, options);
  }

  /** One account with its current balance (`GET /virtual-accounts/{id}`). */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.VirtualAccount>> {
    return this._client.get(`/virtual-accounts/${seg(id)}`, undefined, options);
  }

  /** The accounts, newest first, filtered by `entity_ref` or `status` (`GET /virtual-accounts`). */
  list(params?: M.ListVirtualAccountsParams, options?: RequestOptions): PagePromise<M.VirtualAccount> {
    return this._client.list('/virtual-accounts', params, options);
  }

  /** The balance now, or as it was at `as_of` (`GET /virtual-accounts/{id}/balance`). */
  balance(
    id: string,
    params?: M.GetVirtualAccountBalanceParams,
    options?: RequestOptions,
  ): Promise<WithResponse<M.Balance>> {
    return this._client.get(`/virtual-accounts/${seg(id)}/balance`, params, options);
  }

  /** Freezes an active account: it can no longer send payments. */
  freeze(id: string, options?: RequestOptions): Promise<WithResponse<M.VirtualAccount>> {
    return this._client.post(`/virtual-accounts/${seg(id)}/freeze`, undefined, options);
  }

  /** Unfreezes a frozen account. */
  unfreeze(id: string, options?: RequestOptions): Promise<WithResponse<M.VirtualAccount>> {
    return this._client.post(`/virtual-accounts/${seg(id)}/unfreeze`, undefined, options);
  }

  /** Closes an account at zero balance, for good. */
  close(id: string, options?: RequestOptions): Promise<WithResponse<M.VirtualAccount>> {
    return this._client.post(`/virtual-accounts/${seg(id)}/close`, undefined, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Payments

/** Payments out of virtual accounts. */
export class Payments extends APIResource {
  /**
   * Creates a payment (`POST /payments`). Its `idempotency_key` is, in this order: the body's,
   * `options.idempotencyKey`, or a random UUID; it is sent both in the body and as the
   * `Idempotency-Key` header, the same on the client's retries. Sending the same key and body
   * again returns the original payment (`lastResponse.idempotentReplayed`); the same key with
   * another body throws {@link ConflictError} `idempotency_conflict`.
   *
   * Pay either a raw `destination` or a saved counterparty by `counterparty_id` (`cp_…`; see
   * {@link Counterparties}), exactly one of the two (both or neither: {@link BadRequestError}
   * `param` `counterparty_id`). With `counterparty_id` the payment copies the counterparty's name,
   * account and routing numbers into its `destination` and shows `counterparty_id`; an unknown,
   * deleted, or another platform's or environment's counterparty: {@link NotFoundError} `param`
   * `counterparty_id`. With the platform setting `require_verified_counterparty` on, a payment to a
   * counterparty not `verified`, or to a raw `destination`: {@link UnprocessableEntityError}
   * `counterparty_not_verified`.
   *
   * With `scheduled_for` (`YYYY-MM-DD`, Eastern; after today and at most 365 days ahead, else
   * {@link BadRequestError} `param` `scheduled_for`) the payment is created `scheduled`: nothing
   * held, `journal_entry_id` null, no rail sees it until 06:00 ET on that date, when the rules run
   * again and it is held (`pending`, or `requires_approval`) or `failed` with the rule's code.
   */
  create(body: PaymentCreateParams, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    const key = body.idempotency_key ?? options?.idempotencyKey ?? randomUUID();
    return this._client.post('/payments', { ...body, idempotency_key: key }, { ...options, idempotencyKey: key });
  }

  /** One payment, as it is now: the polling path (`GET /payments/{id}`). */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    return this._client.get(`/payments/${seg(id)}`, undefined, options);
  }

  /** The payments, newest first, with filters (`GET /payments`). */
  list(params?: M.ListPaymentsParams, options?: RequestOptions): PagePromise<M.Payment> {
    return this._client.list('/payments', params, options);
  }

  /**
   * Cancels a `pending` payment, one in `requires_approval`, or a `scheduled` one
   * (`POST /payments/{id}/cancel`): it becomes `canceled` and its hold, if any, is released (a
   * scheduled payment holds nothing). Any other status (a `denied` payment included):
   * {@link ConflictError} `payment_not_cancelable`.
   */
  cancel(id: string, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    return this._client.post(`/payments/${seg(id)}/cancel`, undefined, options);
  }

  /**
   * Approves a payment in `requires_approval` (`POST /payments/{id}/approve`; API.md §12): it
   * becomes `pending` and goes to its rail from now on, with `approval.approved_at` and
   * `approval.approved_by` (this client's key) set. The payment was created `requires_approval`
   * because its amount is at or above the platform's `payment_approval_threshold`
   * (`platform.settings`).
   *
   * It takes a second key: the key that created the payment (`approval.created_by`) is refused with
   * {@link PermissionDeniedError} `forbidden`; make another with `platform.apiKeys.create` and
   * approve from a client of its own. A payment in any other status: {@link ConflictError}
   * `invalid_state`; another platform's or environment's: {@link NotFoundError}.
   *
   * The server does not replay approvals by `Idempotency-Key`: should an approval's answer be lost
   * and the client retry it, the retry answers `invalid_state`; `retrieve` the payment to see where
   * it stands.
   */
  approve(id: string, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    return this._client.post(`/payments/${seg(id)}/approve`, undefined, options);
  }

  /**
   * Denies a payment in `requires_approval` (`POST /payments/{id}/deny`): it becomes `denied`
   * (final), its held amount + fee are released, and `approval.denied_at`, `approval.denied_by` and
   * `approval.denial_reason` (`body.reason`, at most 500 characters, else {@link BadRequestError}
   * `param` `reason`) are set. Any key of the platform may deny, the creating key included (to
   * withdraw a payment). A payment in any other status: {@link ConflictError} `invalid_state`;
   * another platform's or environment's: {@link NotFoundError}. As with {@link approve}, a retried
   * denial whose first answer was lost answers `invalid_state`.
   */
  deny(id: string, body?: M.DenyPaymentRequest, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    return this._client.post(`/payments/${seg(id)}/deny`, body, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Counterparties

/** Counterparties: bank accounts saved once and paid again and again by `counterparty_id`. */
export class Counterparties extends APIResource {
  /**
   * Saves a bank account (`POST /counterparties`): `name`, `account_number` (4 to 17 digits, stored
   * whole but shown only as `account_number_last4`), `routing_number` (valid ABA checksum),
   * `account_type` (`checking` | `savings`), `metadata`; checked as a payment's destination
   * ({@link BadRequestError} with `param`). Created `unverified` (`verification.method` null).
   * An `Idempotency-Key` is sent as on every `POST` (yours, else a random one, the same on the
   * client's retries): the same key and body answer the same counterparty (200,
   * `lastResponse.idempotentReplayed`); another body, {@link ConflictError} `idempotency_conflict`.
   */
  create(body: M.CounterpartyRequest, options?: RequestOptions): Promise<WithResponse<M.Counterparty>> {
    return this._client.post('/counterparties', body, options);
  }

  /** One counterparty (`GET /counterparties/{id}`); a deleted, unknown, or another platform's or environment's one: {@link NotFoundError}. */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.Counterparty>> {
    return this._client.get(`/counterparties/${seg(id)}`, undefined, options);
  }

  /**
   * The counterparties, newest first, deleted ones left out (`GET /counterparties`), filtered by
   * `verification_status` (`unverified`, `pending`, `verified`, `failed`), `created_after`,
   * `created_before` and `metadata` (an object, sent as `metadata[key]=value`, all pairs matching);
   * the filters are kept on every page.
   */
  list(params?: M.ListCounterpartiesParams, options?: RequestOptions): PagePromise<M.Counterparty> {
    return this._client.list('/counterparties', params, options);
  }

  /**
   * Deletes a counterparty (`DELETE /counterparties/{id}`) → `{ id, object: 'counterparty', deleted: true }`.
   * From then on it is {@link NotFoundError} everywhere, new payments naming it too; a payment to it
   * already made keeps its copied destination and goes on.
   */
  delete(id: string, options?: RequestOptions): Promise<WithResponse<M.DeletedCounterparty>> {
    return this._client.delete(`/counterparties/${seg(id)}`, options);
  }

  /**
   * Verifies the account by a zero-dollar ACH prenote (`POST /counterparties/{id}/verify`, body
   * `{ method: 'prenote' }`, the default): the answer is the counterparty with `verification.status`
   * `pending`. In the sandbox it becomes `verified` after the platform's
   * `sandbox.ach_same_day_delay_seconds` (event `counterparty.verified`), or `failed` with
   * `verification.failure_code` the ACH return code for the magic account numbers 4000000002, …03,
   * …04, …16, …23 (R02, R03, R04, R16, R23; event `counterparty.verification_failed`): poll
   * {@link retrieve} or listen for the events.
   *
   * With a live key the answer is the same (`pending`, method `prenote`): the prenote leaves in the
   * next outbound ACH file (a zero-dollar entry, transaction code 23, or 33 to a savings account),
   * and becomes `verified` when its entry settles without a return (event `counterparty.verified`),
   * or `failed` with the return code when the receiving bank returns it, even after it was verified
   * (event `counterparty.verification_failed`). Nothing answers quickly in live: it stays `pending`
   * until a file is cut and settled.
   *
   * A `pending` or `verified` counterparty, in either environment: {@link ConflictError}
   * `invalid_state` (a `failed` one may be verified again).
   */
  verify(
    id: string,
    body: M.VerifyCounterpartyRequest = { method: 'prenote' },
    options?: RequestOptions,
  ): Promise<WithResponse<M.Counterparty>> {
    return this._client.post(`/counterparties/${seg(id)}/verify`, body, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Book transfers

/** Book transfers: money moved at once between two of the platform's virtual accounts. */
export class BookTransfers extends APIResource {
  /**
   * Moves `amount` cents from `from_virtual_account_id` to `to_virtual_account_id` at once
   * (`POST /book-transfers`): the answer is `completed`, both balances have moved, and its
   * `journal_entry_id` is posted. The server requires an idempotency key; it is, in this order: the
   * body's, `options.idempotencyKey`, or a random UUID, sent both in the body and as the
   * `Idempotency-Key` header, the same on the client's retries. The same key and body again return
   * the original transfer (`lastResponse.idempotentReplayed`); the same key with another body throws
   * {@link ConflictError} `idempotency_conflict` (`resourceId` the transfer).
   *
   * Refused, moving nothing: the same account twice ({@link BadRequestError}, `param`
   * `to_virtual_account_id`); an account of another platform or environment, or unknown
   * ({@link NotFoundError}); and, as {@link UnprocessableEntityError} with the account in
   * `resourceId`: a sender not `active` or a `closed` receiver (`account_not_active`; a frozen
   * receiver still receives), a sender whose business is not KYB-approved (`kyb_not_approved`), a
   * sender whose `available` balance is short (`insufficient_funds`).
   */
  create(body: BookTransferCreateParams, options?: RequestOptions): Promise<WithResponse<M.BookTransfer>> {
    const key = body.idempotency_key ?? options?.idempotencyKey ?? randomUUID();
    return this._client.post('/book-transfers', { ...body, idempotency_key: key }, { ...options, idempotencyKey: key });
  }

  /** One book transfer (`GET /book-transfers/{id}`); another platform's or environment's: {@link NotFoundError}. */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.BookTransfer>> {
    return this._client.get(`/book-transfers/${seg(id)}`, undefined, options);
  }

  /**
   * The book transfers, newest first (`GET /book-transfers`), filtered by `virtual_account_id` (out
   * of or into that account), `created_after`, `created_before` and `metadata`.
   */
  list(params?: M.ListBookTransfersParams, options?: RequestOptions): PagePromise<M.BookTransfer> {
    return this._client.list('/book-transfers', params, options);
  }
}

// ---------------------------------------------------------------------------------------------
// KYB

/** KYB verifications of the businesses behind virtual accounts. */
export class KYB extends APIResource {
  /** Submits a business for verification (`POST /kyb`); in the sandbox it is decided within a second. */
  create(body: M.KYBSubmitRequest, options?: RequestOptions): Promise<WithResponse<M.KYBVerification>> {
    return this._client.post('/kyb', body, options);
  }

  /** The same as {@link create}. */
  submit(body: M.KYBSubmitRequest, options?: RequestOptions): Promise<WithResponse<M.KYBVerification>> {
    return this.create(body, options);
  }

  /** One verification, with its `decision` once decided (`GET /kyb/{id}`). */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.KYBVerification>> {
    return this._client.get(`/kyb/${seg(id)}`, undefined, options);
  }

  /** The verifications, filtered by `virtual_account_id` or `status` (`GET /kyb`). */
  list(params?: M.ListKYBVerificationsParams, options?: RequestOptions): PagePromise<M.KYBVerification> {
    return this._client.list('/kyb', params, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Ledger

/** Ledger accounts. */
export class LedgerAccounts extends APIResource {
  /** The platform's ledger accounts with their balances (`GET /ledger/accounts`). */
  list(params?: M.ListLedgerAccountsParams, options?: RequestOptions): PagePromise<M.LedgerAccount> {
    return this._client.list('/ledger/accounts', params, options);
  }
}

/** Ledger entries and manual journal entries. */
export class LedgerEntries extends APIResource {
  /** Ledger entries, newest first, with filters (`GET /ledger/entries`). */
  list(params?: M.ListLedgerEntriesParams, options?: RequestOptions): PagePromise<M.LedgerEntry> {
    return this._client.list('/ledger/entries', params, options);
  }

  /**
   * Posts a manual journal entry (`POST /ledger/entries`) in one of three forms: shorthand
   * (`virtual_account_id`, `direction`, `amount`), `lines`, or `reverses`.
   */
  create(body: M.JournalEntryRequest, options?: RequestOptions): Promise<WithResponse<M.JournalEntry>> {
    return this._client.post('/ledger/entries', body, options);
  }
}

/** Journal entries with their lines and `source`: listed with filters, or one at a time. */
export class LedgerJournalEntries extends APIResource {
  /**
   * The platform's journal entries, newest first (ledger order), each with its lines (`entries`)
   * and `source` exactly as {@link retrieve} shows it (`GET /ledger/journal-entries`). Filters, all
   * combined and kept on every page: `type` (an entry's type; `payment_fee` is a line's, 400 here),
   * `status`, `virtual_account_id` (entries with a line on it; an unknown one gives an empty list),
   * `source_type`, `source_id` (a payment's hold and, if returned, its reversal), `created_after`,
   * `created_before`, and `metadata` (an object, sent as `metadata[key]=value`, all pairs matching).
   * A bad value: {@link BadRequestError} `invalid_request` naming the parameter in `param`.
   */
  list(params?: M.ListJournalEntriesParams, options?: RequestOptions): PagePromise<M.JournalEntry> {
    return this._client.list('/ledger/journal-entries', params, options);
  }

  /**
   * One journal entry with its lines (`entries`) and its `source` (`GET /ledger/journal-entries/{id}`):
   * follows a payment's, inbound transfer's, book transfer's or ledger entry's `journal_entry_id` to the money it moved
   * (each of its lines names the same `source`).
   * Another platform's or environment's id, or an unknown one: {@link NotFoundError}.
   */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.JournalEntry>> {
    return this._client.get(`/ledger/journal-entries/${seg(id)}`, undefined, options);
  }
}

/** The reconciliation export. */
export class LedgerExports extends APIResource {
  /** Every ledger entry created in the range, with running balances, as CSV text (`GET /ledger/exports`). */
  retrieve(params?: M.ExportLedgerParams, options?: RequestOptions): Promise<string> {
    return this._client.getText('/ledger/exports', params, options);
  }
}

/** The double-entry ledger. */
export class Ledger {
  /** Ledger accounts. */
  readonly accounts: LedgerAccounts;
  /** Ledger entries; manual journal entries. */
  readonly entries: LedgerEntries;
  /** Journal entries with their lines and `source`: `list` (filtered) and `retrieve`. */
  readonly journalEntries: LedgerJournalEntries;
  /** CSV exports. */
  readonly exports: LedgerExports;
  constructor(client: APIClient) {
    this.accounts = new LedgerAccounts(client);
    this.entries = new LedgerEntries(client);
    this.journalEntries = new LedgerJournalEntries(client);
    this.exports = new LedgerExports(client);
  }
}

// ---------------------------------------------------------------------------------------------
// Webhooks and events

/** A webhook endpoint's deliveries. */
export class WebhookDeliveries extends APIResource {
  /** The endpoint's deliveries, filtered by `status` (`GET /webhooks/{id}/deliveries`). */
  list(
    webhookId: string,
    params?: M.ListWebhookDeliveriesParams,
    options?: RequestOptions,
  ): PagePromise<M.WebhookDelivery> {
    return this._client.list(`/webhooks/${seg(webhookId)}/deliveries`, params, options);
  }

  /** Queues a new attempt of a delivery (`POST /webhooks/{id}/deliveries/{delivery_id}/retry`). */
  retry(webhookId: string, deliveryId: string, options?: RequestOptions): Promise<WithResponse<M.QueuedWebhookDelivery>> {
    return this._client.post(`/webhooks/${seg(webhookId)}/deliveries/${seg(deliveryId)}/retry`, undefined, options);
  }
}

/** Webhook endpoints. (To check a delivery's signature, see {@link verify} / `Treasury.webhooks.verify`.) */
export class Webhooks extends APIResource {
  /** Deliveries of an endpoint. */
  readonly deliveries: WebhookDeliveries;

  constructor(client: APIClient) {
    super(client);
    this.deliveries = new WebhookDeliveries(client);
  }

  /** Creates an endpoint (`POST /webhooks`); the answer's `secret` is shown this once. */
  create(body: M.CreateWebhookRequest, options?: RequestOptions): Promise<WithResponse<WebhookEndpointWithSecret>> {
    return this._client.post('/webhooks', body, options);
  }

  /** The endpoints, with their delivery status (`GET /webhooks`). */
  list(params?: M.ListWebhooksParams, options?: RequestOptions): PagePromise<M.WebhookEndpoint> {
    return this._client.list('/webhooks', params, options);
  }

  /** One endpoint (`GET /webhooks/{id}`). */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.WebhookEndpoint>> {
    return this._client.get(`/webhooks/${seg(id)}`, undefined, options);
  }

  /** Changes the fields given (`PATCH /webhooks/{id}`). */
  update(id: string, body: M.UpdateWebhookRequest, options?: RequestOptions): Promise<WithResponse<M.WebhookEndpoint>> {
    return this._client.patch(`/webhooks/${seg(id)}`, body, options);
  }

  /** Deletes an endpoint (`DELETE /webhooks/{id}`). */
  delete(id: string, options?: RequestOptions): Promise<WithResponse<M.DeletedWebhookEndpoint>> {
    return this._client.delete(`/webhooks/${seg(id)}`, options);
  }

  /** A new secret (shown this once); the old one keeps signing beside it for 24 h. */
  rotateSecret(id: string, options?: RequestOptions): Promise<WithResponse<WebhookEndpointWithSecret>> {
    return this._client.post(`/webhooks/${seg(id)}/rotate-secret`, undefined, options);
  }

  /** Sends a `webhook.test` event to the endpoint (`POST /webhooks/{id}/test`). */
  test(id: string, options?: RequestOptions): Promise<WithResponse<M.QueuedWebhookDelivery>> {
    return this._client.post(`/webhooks/${seg(id)}/test`, undefined, options);
  }

  /**
   * Sends the platform's past events of a window to the endpoint again (`POST /webhooks/{id}/replay`):
   * `created_after` (inclusive) and `created_before` (exclusive), RFC 3339 times or `YYYY-MM-DD`
   * dates (midnight UTC), and optionally `types` (those event types, subscribed to or not; left out,
   * the endpoint's subscriptions). Each event becomes a new delivery (its own `webhook-id`,
   * `replay_id` this replay's id) carrying the event as first sent, with its original `id`, signed
   * like any delivery. The answer (201) says how many were queued (`replayed`).
   *
   * An `Idempotency-Key` is sent as on every `POST` (yours, else a random one, the same on the
   * client's retries): the same key and body answer the same replay (200,
   * `lastResponse.idempotentReplayed`) and queue nothing again; another body, or another endpoint,
   * {@link ConflictError} `idempotency_conflict`. More than 10,000 events in the window:
   * {@link BadRequestError} `replay_too_large` (nothing queued: split the window); a reversed window
   * or an unknown type: `invalid_request` with `param`; a disabled endpoint: {@link ConflictError}
   * `invalid_state`; another platform's, environment's, a deleted or unknown endpoint: {@link NotFoundError}.
   */
  replay(id: string, body: M.WebhookReplayRequest, options?: RequestOptions): Promise<WithResponse<M.WebhookReplay>> {
    return this._client.post(`/webhooks/${seg(id)}/replay`, body, options);
  }

  /** The same as `Treasury.webhooks.verify`: checks a delivery's signature and returns its event. */
  verify(
    rawBody: string | Uint8Array,
    headers: WebhookHeaders,
    secret: string | readonly string[],
    options?: VerifyOptions,
  ): M.Event {
    return verify(rawBody, headers, secret, options);
  }
}

/** Events (kept at least 30 days). */
export class Events extends APIResource {
  /** The events, newest first, filtered by `type` or time (`GET /events`). */
  list(params?: M.ListEventsParams, options?: RequestOptions): PagePromise<M.Event> {
    return this._client.list('/events', params, options);
  }

  /** One event (`GET /events/{id}`). */
  retrieve(id: string, options?: RequestOptions): Promise<WithResponse<M.Event>> {
    return this._client.get(`/events/${seg(id)}`, undefined, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Simulations (sandbox keys only)

/** Simulated inbound funds. */
export class SimulatedInboundTransfers extends APIResource {
  /** Simulates funds arriving (`POST /simulations/inbound-transfers`): RTP and FedNow credit at once, ACH after the sandbox delay. */
  create(body: M.SimulateInboundTransferRequest, options?: RequestOptions): Promise<WithResponse<M.InboundTransfer>> {
    return this._client.post('/simulations/inbound-transfers', body, options);
  }
}

/** Simulated KYB decisions. */
export class SimulatedKYB extends APIResource {
  /** Decides a verification in `pending_review` (`POST /simulations/kyb/{id}/decision`). */
  decide(id: string, body: M.KYBDecisionRequest, options?: RequestOptions): Promise<WithResponse<M.KYBVerification>> {
    return this._client.post(`/simulations/kyb/${seg(id)}/decision`, body, options);
  }
}

/** Simulated rail outcomes of payments, and the release of scheduled ones. */
export class SimulatedPayments extends APIResource {
  /** Settles a submitted sandbox payment now (`POST /simulations/payments/{id}/complete`). */
  complete(id: string, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    return this._client.post(`/simulations/payments/${seg(id)}/complete`, undefined, options);
  }

  /** Fails a sandbox payment with a rail code, e.g. `{ network_code: 'R01' }` (`POST /simulations/payments/{id}/fail`). */
  fail(id: string, body: M.SimulatePaymentFailRequest, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    return this._client.post(`/simulations/payments/${seg(id)}/fail`, body, options);
  }

  /**
   * Releases a `scheduled` sandbox payment now, as its `scheduled_for` date would
   * (`POST /simulations/payments/{id}/release`, no body): the rules run on today's balance, daily
   * limit, fee and approval threshold. Passed: held, `journal_entry_id` set, `pending` (or
   * `requires_approval` at the threshold), event `payment.released`. Refused: `failed`,
   * `failure.code` the rule's (`insufficient_funds`, `limit_exceeded`, `account_not_active`,
   * `kyb_not_approved`, `compliance_rejected`) and `failure.network_code` null. A payment that is
   * not `scheduled`: {@link ConflictError} `invalid_state` (a payment is released once).
   */
  release(id: string, options?: RequestOptions): Promise<WithResponse<M.Payment>> {
    return this._client.post(`/simulations/payments/${seg(id)}/release`, undefined, options);
  }
}

/** The sandbox's simulations (sandbox keys only; a live key gets {@link PermissionDeniedError}). */
export class Simulations {
  /** Inbound transfers. */
  readonly inboundTransfers: SimulatedInboundTransfers;
  /** KYB decisions. */
  readonly kyb: SimulatedKYB;
  /** Payment outcomes, and releases of scheduled payments. */
  readonly payments: SimulatedPayments;
  constructor(client: APIClient) {
    this.inboundTransfers = new SimulatedInboundTransfers(client);
    this.kyb = new SimulatedKYB(client);
    this.payments = new SimulatedPayments(client);
  }
}
