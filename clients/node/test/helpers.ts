// Shared by the tests: the route table, the OpenAPI document, small utilities.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Every route of the API → the client method that calls it. test/openapi.test.ts checks that this
 * table and the OpenAPI document have the same routes and that every method exists; the journey
 * test checks that every route was called against the server.
 */
export const ROUTES: Record<string, string> = {
  'POST /platforms': 'platforms.register',
  'GET /operator/platforms': 'platforms.list',
  'GET /operator/platforms/{id}': 'platforms.retrieve',
  'PATCH /operator/platforms/{id}': 'platforms.update',
  'POST /operator/platforms/{id}/approve': 'platforms.approve',
  'POST /operator/platforms/{id}/enable-live': 'platforms.enableLive',
  'POST /operator/platforms/{id}/fund': 'platforms.fund',
  'POST /operator/kyb/{id}/decision': 'operator.kyb.decide',
  'GET /operator/rails/ach/files': 'operator.achFiles.list',
  'POST /operator/rails/ach/files': 'operator.achFiles.cut',
  'GET /platform': 'platform.retrieve',
  'GET /platform/settings': 'platform.settings.retrieve',
  'PATCH /platform/settings': 'platform.settings.update',
  'POST /platform/api-keys': 'platform.apiKeys.create',
  'GET /platform/api-keys': 'platform.apiKeys.list',
  'DELETE /platform/api-keys/{id}': 'platform.apiKeys.revoke',
  'POST /platform/api-keys/{id}/roll': 'platform.apiKeys.roll',
  'GET /platform/revenue-share': 'platform.revenueShare',
  'POST /virtual-accounts': 'virtualAccounts.create',
  'GET /virtual-accounts': 'virtualAccounts.list',
  'GET /virtual-accounts/{id}': 'virtualAccounts.retrieve',
  'GET /virtual-accounts/{id}/balance': 'virtualAccounts.balance',
  'GET /virtual-accounts/{id}/transactions': 'virtualAccounts.transactions.list',
  'GET /virtual-accounts/{id}/statements/{month}': 'virtualAccounts.statements.retrieve',
  'POST /virtual-accounts/{id}/freeze': 'virtualAccounts.freeze',
  'POST /virtual-accounts/{id}/unfreeze': 'virtualAccounts.unfreeze',
  'POST /virtual-accounts/{id}/close': 'virtualAccounts.close',
  'POST /payments': 'payments.create',
  'GET /payments': 'payments.list',
  'GET /payments/{id}': 'payments.retrieve',
  'POST /payments/{id}/cancel': 'payments.cancel',
  'POST /payments/{id}/approve': 'payments.approve',
  'POST /payments/{id}/deny': 'payments.deny',
  'POST /book-transfers': 'bookTransfers.create',
  'GET /book-transfers': 'bookTransfers.list',
  'GET /book-transfers/{id}': 'bookTransfers.retrieve',
  'POST /counterparties': 'counterparties.create',
  'GET /counterparties': 'counterparties.list',
  'GET /counterparties/{id}': 'counterparties.retrieve',
  'DELETE /counterparties/{id}': 'counterparties.delete',
  'POST /counterparties/{id}/verify': 'counterparties.verify',
  'POST /kyb': 'kyb.create',
  'GET /kyb': 'kyb.list',
  'GET /kyb/{id}': 'kyb.retrieve',
  'GET /ledger/accounts': 'ledger.accounts.list',
  'GET /ledger/entries': 'ledger.entries.list',
  'POST /ledger/entries': 'ledger.entries.create',
  'GET /ledger/journal-entries': 'ledger.journalEntries.list',
  'GET /ledger/journal-entries/{id}': 'ledger.journalEntries.retrieve',
  'GET /ledger/exports': 'ledger.exports.retrieve',
  'POST /webhooks': 'webhooks.create',
  'GET /webhooks': 'webhooks.list',
  'GET /webhooks/{id}': 'webhooks.retrieve',
  'PATCH /webhooks/{id}': 'webhooks.update',
  'DELETE /webhooks/{id}': 'webhooks.delete',
  'POST /webhooks/{id}/rotate-secret': 'webhooks.rotateSecret',
  'POST /webhooks/{id}/test': 'webhooks.test',
  'POST /webhooks/{id}/replay': 'webhooks.replay',
  'GET /webhooks/{id}/deliveries': 'webhooks.deliveries.list',
  'POST /webhooks/{id}/deliveries/{delivery_id}/retry': 'webhooks.deliveries.retry',
  'GET /events': 'events.list',
  'GET /events/{id}': 'events.retrieve',
  'POST /simulations/inbound-transfers': 'simulations.inboundTransfers.create',
  'POST /simulations/kyb/{id}/decision': 'simulations.kyb.decide',
  'POST /simulations/payments/{id}/complete': 'simulations.payments.complete',
  'POST /simulations/payments/{id}/fail': 'simulations.payments.fail',
  'POST /simulations/payments/{id}/release': 'simulations.payments.release',
};

/** Routes of the document the client deliberately has no method for. */
export const NOT_CLIENT_ROUTES = new Set(['GET /openapi.json']);

/** The OpenAPI document, ../../http/openapi.json from the package's folder (or TREASURY_OPENAPI). */
export function loadOpenAPI(): any {
  const path =
    process.env['TREASURY_OPENAPI'] ?? fileURLToPath(new URL('../../../../http/openapi.json', import.meta.url));
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** "METHOD /path" of every operation of the document. */
export function documentRoutes(doc: any): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries<any>(doc.paths)) {
    for (const method of Object.keys(ops)) {
      if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) out.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return out;
}

/** The route of the table a concrete request (method, URL path after the base) matches, if any. */
export function matchRoute(method: string, path: string): string | undefined {
  for (const route of Object.keys(ROUTES)) {
    const [m, template] = route.split(' ') as [string, string];
    if (m !== method) continue;
    const re = new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]+') + '$');
    if (re.test(path)) return route;
  }
  return undefined;
}

/** Resolves "a.b.c" on an object. */
export function resolvePath(root: unknown, dotted: string): unknown {
  return dotted.split('.').reduce<any>((o, k) => (o == null ? undefined : o[k]), root);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Calls `fn` until `done(value)` or the deadline; returns the last value. */
export async function poll<T>(fn: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 20_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`poll: gave up after ${timeoutMs} ms; last value: ${JSON.stringify(v)}`);
    await sleep(everyMs);
  }
}
