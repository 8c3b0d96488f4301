/**
 * The checks test/e2e/openapi.test.ts relies on can fail: the structural check of OpenAPI 3.1 finds what is broken,
 * the router walk finds routes inside mounted routers and middleware bound to a path, and the body validator
 * refuses what the schema refuses.
 */
import express from 'express';
import { describe, expect, it } from 'vitest';
import { mountedRoutes, openApiProblems, validatorOf } from '../../support/openapi.js';

/** A small valid document, changed by each test. */
function valid(): Record<string, any> {
  return {
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    security: [{ bearer: [] }],
    paths: {
      '/things/{id}': {
        get: {
          operationId: 'getThing',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            200: {
              description: 'ok',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } },
            },
            404: { $ref: '#/components/responses/NotFound', description: 'unknown id' },
          },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Thing: {
          type: 'object',
          properties: { id: { type: 'string' } },
          required: ['id'],
          additionalProperties: false,
        },
      },
      responses: { NotFound: { description: 'not found' } },
    },
  };
}

describe('openApiProblems', () => {
  it('finds nothing in a valid document', () => {
    expect(openApiProblems(valid())).toEqual([]);
  });

  it('finds a $ref that does not resolve', () => {
    const doc = valid();
    doc.paths['/things/{id}'].get.responses[200].content['application/json'].schema.$ref = '#/components/schemas/Thin';

    expect(openApiProblems(doc)).toEqual([
      "#/paths/~1things~1{id}/get/responses/200/content/application~1json/schema: $ref '#/components/schemas/Thin' does not resolve",
    ]);
  });

  it('finds a path template without its parameter, a response without description and an unknown scheme', () => {
    const doc = valid();
    doc.paths['/things/{id}'].get.parameters = [];
    doc.paths['/things/{id}'].get.responses[200].description = undefined;
    doc.paths['/things/{id}'].get.security = [{ basic: [] }];

    expect(openApiProblems(doc)).toEqual([
      "GET /things/{id}: no security scheme 'basic'",
      'GET /things/{id}: {id} has no path parameter',
      'GET /things/{id} 200: a response needs a description',
    ]);
  });

  it('finds a document of another version without components', () => {
    const doc = valid();
    doc.openapi = '3.0.3';
    delete doc.components.schemas;

    expect(openApiProblems(doc)).toContain('openapi is "3.0.3", not "3.1.0"');
    expect(openApiProblems(doc)).toContain('components.schemas is missing or empty');
  });
});

describe('mountedRoutes', () => {
  it('lists routes with their methods, inside mounted routers too, and middleware bound to a path as *', () => {
    const inner = express.Router();
    inner.post('/', (_req, res) => void res.end());
    const outer = express.Router();
    outer.use('/rpc', (_req, _res, next) => next(), inner);
    outer.use('/card', (_req, res) => void res.end());
    const app = express();
    app.use((_req, _res, next) => next());
    app.get('/things/:id', (_req, res) => void res.end());
    app.use(outer);

    expect(mountedRoutes(app)).toEqual([
      { method: 'get', path: '/things/{id}' },
      { method: '*', path: '/rpc' },
      { method: 'post', path: '/rpc' },
      { method: '*', path: '/card' },
    ]);
  });
});

describe('validatorOf', () => {
  it('refuses a field the schema does not have, also inside allOf', () => {
    const doc = valid();
    const thing = validatorOf(doc, { allOf: [{ $ref: '#/components/schemas/Thing' }, { type: 'object' }] });

    expect(thing.check({ id: 'a' })).toEqual([]);
    expect(thing.check({ id: 'a', extra: 1 })).not.toEqual([]);
    expect(thing.check({})).not.toEqual([]);
  });
});
