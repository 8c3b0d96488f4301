/**
 * docs/api-reference.md, written from the OpenAPI document the bridge serves (itself built from the zod schemas):
 * the routes, their parameters, bodies, answers and roles, and every schema's fields, so the reference is never
 * written twice. `npm run docs` writes it; test/unit/docs/api-reference.test.ts fails when it is stale.
 */
import { openApiDocument } from '../../src/http/openapi.js';

type Json = Record<string, unknown>;
type Schema = Json & { $ref?: string; properties?: Record<string, Schema>; required?: string[] };

export const API_REFERENCE_PATH = 'docs/api-reference.md';

const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);
const anchor = (name: string) => `#${name.toLowerCase()}`;
const cell = (text: unknown) =>
  String(text ?? '')
    .replace(/\|/g, '\\|')
    .replace(/\n+/g, ' ');

/** A schema as a short type: `string (date-time)`, `'a' \| 'b'`, `[Subject](#subject)[]`, `object`. */
export function typeOf(schema: Schema | undefined): string {
  if (!schema) return 'any';
  if (schema.$ref) return `[${refName(schema.$ref)}](${anchor(refName(schema.$ref))})`;
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value)).join(' \\| ');
  const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (union) return union.map(typeOf).join(' \\| ');
  if (Array.isArray(schema.allOf)) return (schema.allOf as Schema[]).map(typeOf).join(' & ');
  if (schema.type === 'array') return `${typeOf(schema.items as Schema)}[]`;
  if (typeof schema.format === 'string') return `${String(schema.type)} (${schema.format})`;
  return typeof schema.type === 'string' ? schema.type : Array.isArray(schema.type) ? schema.type.join(' \\| ') : 'any';
}

/** Bounds a field states besides its type: lengths, ranges, default. */
function rulesOf(schema: Schema): string {
  const rules: string[] = [];
  const say = (key: string, text: (value: unknown) => string) => {
    if (schema[key] !== undefined) rules.push(text(schema[key]));
  };
  say('minLength', (v) => (v === 1 ? 'not empty' : `at least ${String(v)} characters`));
  say('maxLength', (v) => `at most ${String(v)} characters`);
  say('minItems', (v) => `at least ${String(v)} items`);
  say('maxItems', (v) => `at most ${String(v)} items`);
  say('minimum', (v) => `≥ ${String(v)}`);
  if (schema.maximum !== Number.MAX_SAFE_INTEGER) say('maximum', (v) => `≤ ${String(v)}`);
  say('default', (v) => `default ${JSON.stringify(v)}`);
  return rules.join('; ');
}

/** One row per field, nested objects as `a.b` (one level down; a `$ref` links to its own table). */
function fieldRows(schema: Schema, prefix = '', depth = 0): string[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).flatMap(([name, field]) => {
    const item = field.type === 'array' ? (field.items as Schema | undefined) : undefined;
    const row = `| \`${prefix}${name}\` | ${typeOf(field)} | ${required.has(name) ? 'yes' : ''} | ${cell(
      [field.description, rulesOf(field)].filter(Boolean).join('. '),
    )} |`;
    const nested = item?.properties ? item : field.properties ? field : undefined;
    const suffix = nested === item ? '[].' : '.';
    return nested && depth < 1 ? [row, ...fieldRows(nested, `${prefix}${name}${suffix}`, depth + 1)] : [row];
  });
}

function schemaSection(name: string, schema: Schema): string[] {
  const rows = fieldRows(schema);
  return [
    `### ${name}`,
    '',
    ...(schema.description ? [String(schema.description), ''] : []),
    ...(rows.length > 0
      ? ['| field | type | required | notes |', '|---|---|---|---|', ...rows, '']
      : [`${typeOf({ ...schema, description: undefined })}`, '']),
  ];
}

const contentType = (content: Json | undefined) => {
  const [mediaType, body] = Object.entries(content ?? {})[0] ?? [];
  return mediaType ? { mediaType, schema: (body as { schema?: Schema }).schema } : undefined;
};

function operationSection(method: string, path: string, op: Json, responses: Json): string[] {
  const parameters = (op.parameters ?? []) as Array<Json & { schema: Schema }>;
  const body = op.requestBody as { description?: string; content?: Json } | undefined;
  const request = contentType(body?.content);
  const answers = Object.entries(op.responses as Record<string, Json>).map(([status, response]) => {
    const problem = typeof response.$ref === 'string' ? responses[refName(response.$ref)] : undefined;
    const returned =
      contentType(response.content as Json | undefined) ??
      (problem ? { mediaType: 'application/problem+json', schema: { $ref: '#/Problem' } } : undefined);
    return `| ${status} | ${cell(response.description)} | ${returned ? `${typeOf(returned.schema)} (\`${returned.mediaType}\`)` : ''} |`;
  });
  return [
    `## \`${method.toUpperCase()} ${path}\``,
    '',
    `${String(op.summary)}. ${String(op.description)}`,
    '',
    ...(parameters.length > 0
      ? [
          '| parameter | in | type | required | notes |',
          '|---|---|---|---|---|',
          ...parameters.map(
            (p) =>
              `| \`${String(p.name)}\` | ${String(p.in)} | ${typeOf(p.schema)} | ${p.required ? 'yes' : ''} | ${cell(
                [p.description, rulesOf(p.schema)].filter(Boolean).join('. '),
              )} |`,
          ),
          '',
        ]
      : []),
    ...(request
      ? [
          `Body (\`${Object.keys(body?.content ?? {}).join('`, `')}\`): ${typeOf(request.schema)}. ${cell(body?.description)}`,
          '',
        ]
      : []),
    '| status | meaning | answer |',
    '|---|---|---|',
    ...answers,
    '',
  ];
}

/** The whole reference, as `npm run docs` writes it. */
export function apiReference(): string {
  const document = openApiDocument() as Json & {
    paths: Record<string, Record<string, Json>>;
    components: { schemas: Record<string, Schema>; responses: Json };
  };
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method, path, op })),
  );
  const lines = [
    '# API reference',
    '',
    '<!-- Written by `npm run docs` (dev/docs/api-reference.ts) from /openapi.json; edit the zod schemas, not this. -->',
    '',
    'Every route of the bridge, from the OpenAPI document it serves at `/openapi.json`. What the routes mean, the',
    'errors, bounds and retries: [api.md](api.md). Problem answers are `application/problem+json`',
    '([Problem](#problem)).',
    '',
    ...operations.map(
      ({ method, path, op }) =>
        `- [\`${method.toUpperCase()} ${path}\`](#${`${method}-${path}`.replace(/[^a-z0-9-]/gi, '').toLowerCase()}): ${String(op.summary)}`,
    ),
    '',
    ...operations.flatMap(({ method, path, op }) => operationSection(method, path, op, document.components.responses)),
    '## Schemas',
    '',
    ...Object.entries(document.components.schemas).flatMap(([name, schema]) => schemaSection(name, schema)),
  ];
  return `${lines.join('\n').trimEnd()}\n`;
}
