#!/usr/bin/env node
// Generates src/models.ts (interfaces of every schema and query of the API) and src/fields.ts (the
// same field lists as runtime data, checked by the compiler against the interfaces) from the API's
// OpenAPI document. Standard library only.
//
//   npm run generate                      # reads ../../http/openapi.json
//   node scripts/generate-models.mjs path/to/openapi.json
//
// test/openapi.test.ts compares src/fields.ts with the document at test time, so a schema or field
// added to the API fails the client's tests until this script is run again (and the result reviewed).

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const specPath = resolve(process.argv[2] ?? resolve(root, '../../http/openapi.json'));
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const schemas = spec.components.schemas;

/** Schemas that are not objects with properties; they get hand-shaped types below. */
const NON_OBJECT = new Set(['Metadata', 'EmptyRequest', 'JournalEntryRequest']);

/** Types that the document leaves as a bare `object`, by "Schema.path". */
const OVERRIDES = {
  'Event.data.object': 'EventObject',
};

const pascal = (s) =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

/** Schema names that would clash with JavaScript globals. */
const RENAME = { Error: 'ErrorBody' };
const tsName = (name) => RENAME[name] ?? name;
const refName = (ref) => ref.split('/').pop();

function doc(text, indent = '') {
  if (!text) return '';
  const lines = String(text).replace(/\*\//g, '*\\/').split('\n');
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} *${l ? ' ' + l : ''}`).join('\n')}\n${indent} */\n`;
}

/** Properties and required names of a schema, allOf members merged in. */
function flatten(schema) {
  let props = {};
  let required = [];
  for (const part of schema.allOf ?? []) {
    const sub = part.$ref ? schemas[refName(part.$ref)] : part;
    const f = flatten(sub);
    props = { ...props, ...f.props };
    required = [...required, ...f.required];
  }
  props = { ...props, ...(schema.properties ?? {}) };
  required = [...required, ...(schema.required ?? [])];
  return { props, required: new Set(required) };
}

const pending = []; // inline object interfaces still to emit: [name, schema, path]

function tsType(schema, path, nameHint) {
  if (OVERRIDES[path]) return OVERRIDES[path];
  if (schema.$ref) return tsName(refName(schema.$ref));
  // A lone `allOf: [{ $ref }]` is how the document puts a description beside a reference.
  if (schema.allOf?.length === 1 && !schema.properties) return tsType(schema.allOf[0], path, nameHint);
  const alts = schema.anyOf ?? schema.oneOf;
  if (alts && !schema.properties) {
    return unique(alts.map((a) => tsType(a, path, nameHint))).join(' | ');
  }
  if (Array.isArray(schema.type)) {
    return unique(schema.type.map((t) => tsType({ ...schema, type: t }, path, nameHint))).join(' | ');
  }
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      const item = tsType(schema.items ?? {}, `${path}[]`, nameHint);
      return /[|&]/.test(item) ? `Array<${item}>` : `${item}[]`;
    }
    case 'object':
    case undefined:
      if (schema.properties) {
        pending.push([nameHint, schema, path]);
        return nameHint;
      }
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        return `Record<string, ${tsType(schema.additionalProperties, `${path}.*`, nameHint)}>`;
      }
      return 'Record<string, unknown>';
    default:
      return 'unknown';
  }
}

function unique(xs) {
  return [...new Set(xs)];
}

const fieldEntries = []; // [key, interfaceName, fields]

function emitInterface(name, schema, path) {
  const { props, required } = flatten(schema);
  let out = doc(schema.description ?? schema.title);
  out += `export interface ${name} {\n`;
  for (const [prop, ps] of Object.entries(props)) {
    const hint = name + pascal(prop);
    const type = tsType(ps, `${path}.${prop}`, hint);
    out += doc(ps.description, '  ');
    const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(prop) ? prop : JSON.stringify(prop);
    out += `  ${key}${required.has(prop) ? '' : '?'}: ${type};\n`;
  }
  out += '}\n';
  fieldEntries.push([path, name, Object.keys(props)]);
  return out;
}

let body = '';
for (const [name, schema] of Object.entries(schemas)) {
  if (name === 'Metadata') {
    body += doc(schema.description) + 'export type Metadata = Record<string, string>;\n\n';
    continue;
  }
  if (name === 'EmptyRequest') continue;
  if (schema.oneOf && !schema.properties) {
    body += doc(schema.description);
    body += `export type ${name} =\n  | ${schema.oneOf.map((s) => tsType(s, name, name)).join('\n  | ')};\n\n`;
    continue;
  }
  if (NON_OBJECT.has(name)) continue;
  body += emitInterface(tsName(name), schema, name) + '\n';
  while (pending.length) {
    const [n, s, p] = pending.shift();
    body += emitInterface(n, s, p) + '\n';
  }
}

// Query parameters of every operation that has some: `<OperationId>Params`.
const queryEntries = [];
const resolveParam = (p) => (p.$ref ? spec.components.parameters[refName(p.$ref)] : p);
for (const [path, ops] of Object.entries(spec.paths)) {
  for (const [method, op] of Object.entries(ops)) {
    if (method === 'parameters') continue;
    const params = [...(ops.parameters ?? []), ...(op.parameters ?? [])].map(resolveParam).filter((p) => p.in === 'query');
    if (!params.length) continue;
    const name = pascal(op.operationId) + 'Params';
    body += doc(`Query parameters of \`${method.toUpperCase()} ${path}\` (\`${op.operationId}\`).`);
    body += `export interface ${name} {\n`;
    for (const p of params) {
      body += doc(p.description, '  ');
      body += `  ${p.name}${p.required ? '' : '?'}: ${tsType(p.schema ?? {}, `${op.operationId}.${p.name}`, name + pascal(p.name))};\n`;
    }
    body += '}\n\n';
    queryEntries.push([op.operationId, name, params.map((p) => p.name)]);
  }
}

const header = `// Code generated by scripts/generate-models.mjs from http/openapi.json (${spec.info.title} ${spec.info.version}); DO NOT EDIT.
// Field names are the API's own (snake_case), exactly as they travel on the wire.

`;

const eventObject = `/** The resource an event carries in \`data.object\`, as \`GET\` returns it. */
export type EventObject =
  | VirtualAccount
  | Payment
  | KYBVerification
  | LedgerEntry
  | InboundTransfer
  | BookTransfer
  | Counterparty
  | Record<string, unknown>;
`;

writeFileSync(resolve(root, 'src/models.ts'), header + body + eventObject);

let fields = `// Code generated by scripts/generate-models.mjs from http/openapi.json; DO NOT EDIT.
// The fields of every model and query of src/models.ts as data, for test/openapi.test.ts. The compiler
// checks each list against its interface: a missing or extra name does not build.

import type * as M from './models.js';

type Missing<T, K extends readonly PropertyKey[]> = Exclude<keyof T, K[number]>;

/** Returns \`keys\` unchanged; fails to compile unless they are exactly the keys of \`T\`. */
function fields<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & ([Missing<T, K>] extends [never] ? unknown : { missing: Missing<T, K> }),
  ): readonly string[] => keys;
}

/** Each schema of the OpenAPI document (and each inline object, as \`Schema.property\`) → its fields. */
export const MODEL_FIELDS: Readonly<Record<string, readonly string[]>> = {
`;
for (const [key, name, list] of fieldEntries) {
  fields += `  ${JSON.stringify(key)}: fields<M.${name}>()([${list.map((f) => JSON.stringify(f)).join(', ')}]),\n`;
}
fields += `};

/** Each operation with query parameters (by operationId) → its parameter names. */
export const QUERY_PARAMS: Readonly<Record<string, readonly string[]>> = {
`;
for (const [key, name, list] of queryEntries) {
  fields += `  ${JSON.stringify(key)}: fields<M.${name}>()([${list.map((f) => JSON.stringify(f)).join(', ')}]),\n`;
}
fields += '};\n';
writeFileSync(resolve(root, 'src/fields.ts'), fields);

console.log(`wrote src/models.ts and src/fields.ts: ${fieldEntries.length} models, ${queryEntries.length} queries`);
