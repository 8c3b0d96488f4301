/**
 * Reading an OpenAPI document and an Express app the way test/e2e/openapi.test.ts compares them: the routes an app
 * mounts (its router stack, mounted routers included), a structural check of OpenAPI 3.1, and a validator of a body
 * against a schema of the document.
 */
import type { Express } from 'express';
import { z } from 'zod';

type Json = Record<string, any>;

/** One thing the app answers: a method on a path (`{param}` templates), or `*` for middleware bound to a path. */
export interface Mounted {
  method: string;
  path: string;
}

interface Layer {
  rawPath?: unknown;
  route?: { methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
}

/** `path` under the prefix a router is mounted at (`''` at the root). */
const under = (prefix: string, path: string) => (path === '/' ? prefix : `${prefix}${path}`);

/**
 * Every route of the app's router and of the routers mounted in it, with its methods. Middleware bound to a path
 * that is no router (it may answer any method there) is listed with method `*`; middleware on `/` is not listed.
 */
export function mountedRoutes(app: Express): Mounted[] {
  const found: Mounted[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (typeof layer.rawPath !== 'string')
        throw new Error(`a layer on ${String(layer.rawPath)}: only string paths are read`);
      const path = (under(prefix, layer.rawPath) || '/').replace(/:(\w+)/g, '{$1}');
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods))
          found.push({ method: method === '_all' ? '*' : method, path });
      } else if (Array.isArray(layer.handle.stack)) {
        walk(layer.handle.stack, under(prefix, layer.rawPath));
      } else if (layer.rawPath !== '/') {
        found.push({ method: '*', path });
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return found;
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Each operation of the document as `METHOD path`. */
export function documentedOperations(doc: Json): { method: string; path: string; operation: Json }[] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    HTTP_METHODS.filter((method) => item[method] !== undefined).map((method) => ({
      method,
      path,
      operation: item[method] as Json,
    })),
  );
}

/** Resolves a local JSON Pointer reference (`#/a/b`, RFC 6901 escapes), or undefined. */
export function resolveRef(doc: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (typeof node !== 'object' || node === null || !(key in node)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}

/** Every `$ref` string in the value, with where it is. */
function refsIn(value: unknown, at = '#'): { at: string; ref: string }[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => refsIn(item, `${at}/${i}`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) =>
    key === '$ref' && typeof child === 'string'
      ? [{ at, ref: child }]
      : refsIn(child, `${at}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`),
  );
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const PATH_ITEM_FIELDS = new Set<string>([...HTTP_METHODS, '$ref', 'summary', 'description', 'servers', 'parameters']);
const SECURITY_TYPES = new Set(['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect']);

/**
 * What makes the document no valid OpenAPI 3.1 in structure (empty when none): the required fields, operations,
 * responses, parameters (path templates included), media types, security, and every `$ref` resolving.
 */
export function openApiProblems(doc: Json): string[] {
  const problems: string[] = [];
  const problem = (message: string) => problems.push(message);
  if (doc.openapi !== '3.1.0') problem(`openapi is ${JSON.stringify(doc.openapi)}, not "3.1.0"`);
  if (!isObject(doc.info) || typeof doc.info.title !== 'string' || typeof doc.info.version !== 'string') {
    problem('info needs a title and a version');
  }
  if (!isObject(doc.paths)) problem('paths is not an object');
  if (
    !isObject(doc.components) ||
    !isObject(doc.components.schemas) ||
    Object.keys(doc.components.schemas).length === 0
  ) {
    problem('components.schemas is missing or empty');
  }
  const schemes = isObject(doc.components?.securitySchemes) ? (doc.components.securitySchemes as Json) : {};
  for (const [name, scheme] of Object.entries(schemes)) {
    if (!SECURITY_TYPES.has(scheme?.type))
      problem(`securitySchemes.${name}: unknown type ${JSON.stringify(scheme?.type)}`);
    if (scheme?.type === 'http' && typeof scheme.scheme !== 'string')
      problem(`securitySchemes.${name}: http needs a scheme`);
  }
  const checkSecurity = (where: string, security: unknown) => {
    if (security === undefined) return;
    if (!Array.isArray(security)) return problem(`${where}: security is not an array`);
    for (const requirement of security) {
      for (const name of Object.keys(requirement as Json))
        if (!(name in schemes)) problem(`${where}: no security scheme '${name}'`);
    }
  };
  checkSecurity('the document', doc.security);
  const checkContent = (where: string, content: unknown) => {
    if (!isObject(content) || Object.keys(content).length === 0) return problem(`${where}: content is empty`);
    for (const [type, media] of Object.entries(content)) {
      if (!/^[\w.+*-]+\/[\w.+*-]+$/.test(type)) problem(`${where}: '${type}' is not a media type`);
      if (!isObject(media) || !isObject(media.schema)) problem(`${where} ${type}: no schema`);
    }
  };
  const operationIds = new Set<string>();
  for (const [path, item] of Object.entries(isObject(doc.paths) ? doc.paths : {})) {
    if (!path.startsWith('/')) problem(`path '${path}' does not start with /`);
    if (!isObject(item)) {
      problem(`${path}: not a path item`);
      continue;
    }
    for (const key of Object.keys(item))
      if (!PATH_ITEM_FIELDS.has(key) && !key.startsWith('x-')) problem(`${path}: unknown field '${key}'`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    for (const method of HTTP_METHODS) {
      const op = item[method] as Json | undefined;
      if (op === undefined) continue;
      const where = `${method.toUpperCase()} ${path}`;
      if (typeof op.operationId === 'string') {
        if (operationIds.has(op.operationId)) problem(`${where}: operationId '${op.operationId}' is not unique`);
        operationIds.add(op.operationId);
      }
      checkSecurity(where, op.security);
      const parameters = [...((item.parameters as Json[]) ?? []), ...((op.parameters as Json[]) ?? [])];
      for (const parameter of parameters) {
        if (typeof parameter.name !== 'string' || !['query', 'header', 'path', 'cookie'].includes(parameter.in)) {
          problem(`${where}: a parameter needs a name and in (query, header, path, cookie)`);
        }
        if (!isObject(parameter.schema) && !isObject(parameter.content))
          problem(`${where}: parameter ${parameter.name} has no schema`);
        if (parameter.in === 'path' && parameter.required !== true)
          problem(`${where}: path parameter ${parameter.name} must be required`);
        if (parameter.in === 'path' && !templated.includes(parameter.name))
          problem(`${where}: path parameter ${parameter.name} is not in the path`);
      }
      for (const name of templated) {
        if (!parameters.some((p) => p.in === 'path' && p.name === name))
          problem(`${where}: {${name}} has no path parameter`);
      }
      if (op.requestBody !== undefined) checkContent(`${where} requestBody`, op.requestBody.content);
      if (!isObject(op.responses) || Object.keys(op.responses).length === 0) {
        problem(`${where}: no responses`);
        continue;
      }
      for (const [status, response] of Object.entries(op.responses)) {
        if (!/^([1-5]\d\d|[1-5]XX|default)$/.test(status)) problem(`${where}: '${status}' is not a status`);
        if (!isObject(response)) {
          problem(`${where} ${status}: not a response`);
        } else if (response.$ref === undefined) {
          if (typeof response.description !== 'string') problem(`${where} ${status}: a response needs a description`);
          if (response.content !== undefined) checkContent(`${where} ${status}`, response.content);
        } else {
          const extra = Object.keys(response).filter((key) => !['$ref', 'summary', 'description'].includes(key));
          if (extra.length > 0) problem(`${where} ${status}: a reference carries ${extra.join(', ')}`);
        }
      }
    }
  }
  for (const { at, ref } of refsIn(doc)) {
    if (resolveRef(doc, ref) === undefined) problem(`${at}: $ref '${ref}' does not resolve`);
  }
  return problems;
}

/** Follows a Reference Object (e.g. a response that is `{$ref: '#/components/responses/…'}`) to what it names. */
export function dereference(doc: Json, value: Json): Json {
  return typeof value.$ref === 'string' ? dereference(doc, resolveRef(doc, value.$ref) as Json) : value;
}

/**
 * A zod schema (z.fromJSONSchema) of a schema of the document, its component references resolved. Each member of
 * a top-level `allOf` is checked on its own: fromJSONSchema drops `additionalProperties: false` inside one.
 */
export function validatorOf(doc: Json, schema: Json): { check(value: unknown): string[] } {
  const local = (value: unknown): Json =>
    JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"#/$defs/'));
  const defs = local(doc.components.schemas);
  const members: Json[] = Array.isArray(schema.allOf) ? schema.allOf : [schema];
  const validators = members.map((member) =>
    z.fromJSONSchema({ ...local(member), $defs: defs } as Parameters<typeof z.fromJSONSchema>[0]),
  );
  return {
    check(value) {
      return validators.flatMap((validator) => {
        const result = validator.safeParse(value);
        return result.success
          ? []
          : result.error.issues.map((issue) => `${issue.path.join('/') || '(body)'}: ${issue.message}`);
      });
    },
  };
}
