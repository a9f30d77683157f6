// The client against the OpenAPI document: every schema's fields, every query's parameters and
// every route. A field, schema, parameter or route added to the API fails here until the client
// has it (npm run generate for models; src/resources.ts and test/helpers.ts ROUTES for routes).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import Treasury from '../src/index.js';
import { MODEL_FIELDS, QUERY_PARAMS } from '../src/fields.js';
import { NOT_CLIENT_ROUTES, ROUTES, documentRoutes, loadOpenAPI, resolvePath } from './helpers.js';

const doc = loadOpenAPI();
const schemas: Record<string, any> = doc.components.schemas;

/** Schemas that are not objects with properties (a map, an empty body, a union of other schemas). */
const NOT_OBJECTS = new Set(['Metadata', 'EmptyRequest', 'JournalEntryRequest']);

function properties(schema: any): string[] {
  const out: string[] = [];
  for (const part of schema.allOf ?? []) {
    out.push(...properties(part.$ref ? schemas[part.$ref.split('/').pop()] : part));
  }
  out.push(...Object.keys(schema.properties ?? {}));
  return [...new Set(out)];
}

/** Every object with properties of the document: each schema, and inline objects as "Schema.prop". */
function documentModels(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const visit = (key: string, schema: any) => {
    out.set(key, properties(schema));
    const props: Record<string, any> = {};
    for (const part of schema.allOf ?? []) if (!part.$ref) Object.assign(props, part.properties ?? {});
    Object.assign(props, schema.properties ?? {});
    for (const [name, ps] of Object.entries<any>(props)) inline(`${key}.${name}`, ps);
  };
  const inline = (key: string, ps: any) => {
    if (!ps || ps.$ref) return;
    if (ps.properties) return visit(key, ps);
    for (const alt of [...(ps.anyOf ?? []), ...(ps.oneOf ?? [])]) inline(key, alt);
    if (ps.items) inline(`${key}[]`, ps.items);
  };
  for (const [name, schema] of Object.entries<any>(schemas)) {
    if (properties(schema).length === 0) {
      assert.ok(NOT_OBJECTS.has(name), `schema ${name} has no properties and the client has no type for it`);
      continue;
    }
    visit(name, schema);
  }
  return out;
}

test('every schema of the document has a model with exactly its fields', () => {
  const models = documentModels();
  assert.ok(models.size > 50, `only ${models.size} schemas found: wrong document?`);
  const problems: string[] = [];
  for (const [key, fields] of models) {
    const mine = MODEL_FIELDS[key];
    if (!mine) {
      problems.push(`schema ${key} (${fields.join(', ')}) has no model in src/models.ts`);
      continue;
    }
    const missing = fields.filter((f) => !mine.includes(f));
    const extra = mine.filter((f) => !fields.includes(f));
    if (missing.length) problems.push(`${key}: the model lacks ${missing.join(', ')}`);
    if (extra.length) problems.push(`${key}: the model has ${extra.join(', ')}, which the document does not`);
  }
  for (const key of Object.keys(MODEL_FIELDS)) {
    if (!models.has(key)) problems.push(`model ${key} matches no schema of the document`);
  }
  assert.deepEqual(problems, [], 'run `npm run generate`, then review src/models.ts');
});

test('every query parameter of the document is in the params types', () => {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const ops of Object.values<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      if (method === 'parameters' || !op.operationId) continue;
      const names = [...(ops.parameters ?? []), ...(op.parameters ?? [])]
        .map((p: any) => (p.$ref ? doc.components.parameters[p.$ref.split('/').pop()] : p))
        .filter((p: any) => p.in === 'query')
        .map((p: any) => p.name as string);
      if (!names.length) continue;
      seen.add(op.operationId);
      const mine = QUERY_PARAMS[op.operationId] ?? [];
      const missing = names.filter((n) => !mine.includes(n));
      const extra = mine.filter((n) => !names.includes(n));
      if (missing.length) problems.push(`${op.operationId}: the params type lacks ${missing.join(', ')}`);
      if (extra.length) problems.push(`${op.operationId}: the params type has ${extra.join(', ')}, which the document does not`);
    }
  }
  for (const id of Object.keys(QUERY_PARAMS)) if (!seen.has(id)) problems.push(`params of ${id}: no such operation`);
  assert.deepEqual(problems, [], 'run `npm run generate`');
});

test('every route of the document has a client method, and every method a route', () => {
  const routes = documentRoutes(doc).filter((r) => !NOT_CLIENT_ROUTES.has(r));
  const missing = routes.filter((r) => !(r in ROUTES));
  const extra = Object.keys(ROUTES).filter((r) => !routes.includes(r));
  assert.deepEqual(missing, [], 'routes of openapi.json without a client method (add it to src/resources.ts and to ROUTES)');
  assert.deepEqual(extra, [], 'client routes that openapi.json does not have');

  const client = new Treasury({ apiKey: 'sk_sandbox_unused', baseURL: 'http://127.0.0.1:1/v1' });
  for (const [route, method] of Object.entries(ROUTES)) {
    assert.equal(typeof resolvePath(client, method), 'function', `${route}: client.${method} is not a method`);
  }
});
