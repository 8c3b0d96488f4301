/**
 * The bridge's OpenAPI 3.1 document, served at `/openapi.json`: generated with `z.toJSONSchema` from the zod schemas
 * the routes parse requests with and type their answers by (src/schemas/, listed per route in openapi-routes.ts),
 * so it cannot drift from them. Requests are described as zod reads them (`io: 'input'`), answers as the routes
 * produce them (`io: 'output'`).
 */
import { z } from 'zod';
import pkg from '../../package.json' with { type: 'json' };
import type { Role } from '../auth/principals.js';
import { eventV03Schema, streamResponseV1Schema } from '../schemas/a2a.js';
import {
  expectationSchema,
  extensionMetadataSchema,
  factSchema,
  isoDuration,
  openLapseSchema,
  reportedFactSchema,
  subjectSchema,
  EXTENSION_URI,
} from '../../core/schemas/extension.js';
import {
  expectationPageSchema,
  expectationSummarySchema,
  factsBodySchema,
  factsResultSchema,
  fieldErrorSchema,
  healthSchema,
  ingestResultSchema,
  problemSchema,
  readinessSchema,
  resendResultSchema,
  withdrawBodySchema,
  withdrawResultSchema,
} from '../schemas/http.js';
import { lapseDeliverySchema, openExpectationRecordSchema, openLapseEntrySchema } from '../../core/schemas/record.js';
import {
  a2aEventSchema,
  agentCardSchema,
  jsonRpcRequestSchema,
  jsonRpcResponseSchema,
  openApiDocumentSchema,
  operations,
  type OperationSpec,
  type ResponseSpec,
} from './openapi-routes.js';
import { PROBLEM_CONTENT_TYPE, problemKinds, problemType } from '../web/problem.js';

type Json = Record<string, unknown>;
type Side = 'input' | 'output';

/** A named schema of `components.schemas`. */
interface Component {
  schema: z.ZodType;
  description: string;
}

/** What requests carry, described as zod parses them. */
const requestComponents: Record<string, Component> = {
  A2AEvent: {
    schema: a2aEventSchema,
    description: 'One A2A object: a v1.0 StreamResponse or a v0.3 object with `kind`',
  },
  StreamResponseV1: {
    schema: streamResponseV1Schema,
    description: 'A2A v1.0 (ProtoJSON): exactly one of task, message, statusUpdate, artifactUpdate',
  },
  EventV03: {
    schema: eventV03Schema,
    description: 'A2A v0.3: a task, message, status-update or artifact-update by `kind`',
  },
  ExtensionPayload: {
    schema: extensionMetadataSchema,
    description: `What metadata["${EXTENSION_URI}"] of an artifact or message carries`,
  },
  Expectation: {
    schema: expectationSchema,
    description: 'An expectation as an agent raises it (spec/expectations-v1.json)',
  },
  ReportedFact: {
    schema: reportedFactSchema,
    description: 'A fact as reported; `source` is set by the watcher to the principal',
  },
  FactsRequest: { schema: factsBodySchema, description: 'The body of POST /v1/facts' },
  WithdrawRequest: { schema: withdrawBodySchema, description: 'The body of POST /v1/expectations/{id}/withdraw' },
  JsonRpcRequest: {
    schema: jsonRpcRequestSchema,
    description: 'A JSON-RPC 2.0 request of A2A (e.g. method SendMessage)',
  },
};

/**
 * What the routes answer, described as they produce it; but `lapse`, an open set (a client must take a value a later
 * watcher adds), is described as a client reads it (openLapseSchema): any string, the known ones listed.
 */
const responseComponents: Record<string, Component> = {
  ExpectationRecord: { schema: openExpectationRecordSchema, description: "The watcher's record of one expectation" },
  LapseEntry: { schema: openLapseEntrySchema, description: 'One lapse and how its delivery went' },
  LapseDelivery: { schema: lapseDeliverySchema, description: 'How the delivery of one lapse task went' },
  Lapse: { schema: openLapseSchema, description: 'A lapse, as the lapse task carries it; `lapse` is an open set' },
  Fact: { schema: factSchema, description: 'A fact as the watcher recorded it' },
  Subject: { schema: subjectSchema, description: 'What an expectation or fact is about' },
  ExpectationPage: { schema: expectationPageSchema, description: 'One page of GET /v1/expectations' },
  ExpectationSummary: { schema: expectationSummarySchema, description: 'An expectation as visibility knows it' },
  IngestResult: { schema: ingestResultSchema, description: 'One result per item of the request' },
  FactsResult: { schema: factsResultSchema, description: 'One result per fact' },
  WithdrawResult: { schema: withdrawResultSchema, description: 'What withdrawing did' },
  ResendResult: { schema: resendResultSchema, description: 'What re-sending a lapse task did' },
  Problem: { schema: problemSchema, description: 'An application/problem+json body (RFC 9457)' },
  FieldError: { schema: fieldErrorSchema, description: 'One bad field, its path slash-separated (RFC 6901 escaping)' },
  Health: { schema: healthSchema, description: 'Liveness' },
  Readiness: { schema: readinessSchema, description: 'Readiness' },
  AgentCard: { schema: agentCardSchema, description: 'An A2A v1.0 AgentCard (https://a2a-protocol.org)' },
  JsonRpcResponse: { schema: jsonRpcResponseSchema, description: 'A JSON-RPC 2.0 response of A2A' },
  OpenApiDocument: { schema: openApiDocumentSchema, description: 'An OpenAPI 3.1 document' },
};

const SCHEMAS = '#/components/schemas/';
const ref = (name: string) => ({ $ref: `${SCHEMAS}${name}` });

/**
 * What the JSON Schema of a zod schema cannot say by itself: item arrays the service checks one by one (typed
 * `unknown` so that each bad item is reported with its path) name the schema it checks them with, durations their
 * format (a refinement is invisible to toJSONSchema), and a field read leniently (`.catch`, e.g. `extensions` of an
 * A2A message) takes any value, the one it describes being the one it reads (only requests are parsed with one).
 */
const itemsOf = new Map<z.ZodType, string>([
  [factsBodySchema.shape.facts, 'ReportedFact'],
  [extensionMetadataSchema.shape.expectations.unwrap(), 'Expectation'],
  [extensionMetadataSchema.shape.facts.unwrap(), 'ReportedFact'],
]);
function annotate({ zodSchema, jsonSchema }: { zodSchema: unknown; jsonSchema: Json }): void {
  const items = itemsOf.get(zodSchema as z.ZodType);
  if (items) jsonSchema.items = ref(items);
  if (zodSchema === isoDuration) jsonSchema.format = 'duration';
  if ((zodSchema as z.ZodType)._zod.def.type === 'catch') {
    const read = { ...jsonSchema };
    for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
    Object.assign(jsonSchema, { anyOf: [read, { description: 'any other value: read as absent, not refused' }] });
  }
}

/** `components.schemas` of one side; a schema registered on this side is referenced, anything else inlined. */
function componentsOf(components: Record<string, Component>, io: Side): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, { schema }] of Object.entries(components)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { io, uri: (id) => `${SCHEMAS}${id}`, override: annotate });
  if ('__shared' in schemas) throw new Error('a schema reused across components has no name of its own');
  return Object.fromEntries(
    Object.entries(schemas).map(([id, json]) => {
      const { $schema: _schema, $id: _id, ...rest } = json as Json;
      return [id, { description: components[id]!.description, ...rest }];
    }),
  );
}

/** A reference to the schema when it is a component of its side, else the schema inline. */
function schemaOf(schema: z.ZodType, io: Side): Json {
  const components = io === 'input' ? requestComponents : responseComponents;
  const name = Object.entries(components).find(([, c]) => c.schema === schema)?.[0];
  if (name) return ref(name);
  const { $schema: _schema, ...inline } = z.toJSONSchema(schema, { io, override: annotate }) as Json;
  return inline;
}

/** Path or query parameters, one per property of the object schema. */
function parametersOf(schema: z.ZodObject, where: 'path' | 'query'): Json[] {
  const json = z.toJSONSchema(schema, { io: 'input' }) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, { description, ...property }]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    ...(description !== undefined ? { description } : {}),
    schema: property,
  }));
}

/** Headers the problem answers carry (sendProblem in problem.ts sets them). */
const problemHeaders: Record<number, Record<string, string>> = {
  401: { 'WWW-Authenticate': '`Bearer`: the scheme the bridge expects' },
  429: { 'Retry-After': 'Seconds until the same request fits the quota again' },
  503: { 'Retry-After': 'Seconds to wait before sending the same request again' },
};

const headersOf = (headers: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }]),
  );

/** `components.responses`: one problem answer per status, its `type` and `title` those problem.ts maps to it. */
function problemResponses(statuses: readonly number[]): Record<string, Json> {
  return Object.fromEntries(
    statuses.map((status) => {
      const kinds = problemKinds.filter((kind) => kind.status === status);
      if (kinds.length === 0) throw new Error(`no problem of problem.ts answers ${status}`);
      const schema = {
        allOf: [
          ref('Problem'),
          {
            type: 'object',
            properties: {
              type: { enum: kinds.map((kind) => problemType(kind.slug)) },
              title: { enum: kinds.map((kind) => kind.title) },
              status: { const: status },
            },
          },
        ],
      };
      const response = {
        description: kinds.map((kind) => kind.title).join('; or '),
        ...(problemHeaders[status] ? { headers: headersOf(problemHeaders[status]) } : {}),
        content: { [PROBLEM_CONTENT_TYPE]: { schema } },
      };
      return [`Problem${status}`, response];
    }),
  );
}

/** What an operation answers: its own responses and those its body implies. */
const responsesOf = (op: OperationSpec): Record<number, ResponseSpec> => ({ ...op.body?.problems, ...op.responses });

function responseOf(status: number, spec: ResponseSpec): Json {
  if (typeof spec === 'string') return { $ref: `#/components/responses/Problem${status}`, description: spec };
  return {
    description: spec.description,
    ...(spec.headers ? { headers: headersOf(spec.headers) } : {}),
    ...(spec.mediaType && spec.schema
      ? { content: { [spec.mediaType]: { schema: schemaOf(spec.schema, 'output') } } }
      : {}),
  };
}

const rolesText = (roles: Partial<Record<Role, string>>) =>
  `Roles: ${Object.entries(roles)
    .map(([role, note]) => (note ? `${role} (${note})` : role))
    .join(', ')}.`;

function operationOf(op: OperationSpec): Json {
  const parameters = [
    ...(op.params ? parametersOf(op.params, 'path') : []),
    ...(op.query ? parametersOf(op.query, 'query') : []),
  ];
  return {
    operationId: op.operationId,
    tags: [op.tag],
    summary: op.summary,
    description: op.roles ? `${op.description}\n\n${rolesText(op.roles)}` : op.description,
    // Public routes override the document's bearer requirement; `x-roles` lists the roles any one of which lets a
    // principal in (OpenAPI's own role list under `security` would mean all of them).
    ...(op.roles ? { 'x-roles': Object.keys(op.roles) } : { security: [] }),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? {
          requestBody: {
            required: true,
            description: op.body.description,
            content: Object.fromEntries(
              op.body.mediaTypes.map((type) => [type, { schema: schemaOf(op.body!.schema, 'input') }]),
            ),
          },
        }
      : {}),
    responses: Object.fromEntries(
      Object.entries(responsesOf(op)).map(([status, spec]) => [status, responseOf(Number(status), spec)]),
    ),
  };
}

const DESCRIPTION = `The bridge of the expectations watcher (DESIGN section 4; docs/api.md): A2A objects and fact feeds in,
expectation records and lists out. Every route but the public ones (\`security: []\`) needs \`Authorization: Bearer
<token>\` of a principal with one of the operation's \`x-roles\`. Errors are \`application/problem+json\` (RFC 9457);
an unknown route is a 404 problem (DESIGN 4), a method no operation of a path lists included (not a 405), and any
route may answer a 500 \`internal\` problem on a bug. Bodies are limited to 1 MiB. When a request carries
\`A2A-Extensions\` listing ${EXTENSION_URI}, the response echoes it.`;

function build(): Json {
  const overlap = Object.keys(requestComponents).filter((name) => name in responseComponents);
  if (overlap.length > 0) throw new Error(`component names on both sides: ${overlap.join(', ')}`);
  const paths: Record<string, Json> = {};
  for (const op of operations) (paths[op.path] ??= {})[op.method] = operationOf(op);
  const problemStatuses = [
    ...new Set(
      operations.flatMap((op) =>
        Object.entries(responsesOf(op))
          .filter(([, s]) => typeof s === 'string')
          .map(([status]) => Number(status)),
      ),
    ),
  ].sort((a, b) => a - b);
  return {
    openapi: '3.1.0',
    info: { title: 'Expectations watcher bridge', version: pkg.version, description: DESCRIPTION },
    tags: [...new Set(operations.map((op) => op.tag))].map((name) => ({ name })),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            "A principal's token; the principals file keeps its sha256 and the principal's roles (agent, reporter, reader, admin).",
        },
      },
      schemas: { ...componentsOf(requestComponents, 'input'), ...componentsOf(responseComponents, 'output') },
      responses: problemResponses(problemStatuses),
    },
  };
}

let document: Json | undefined;

/** The OpenAPI 3.1 document of the bridge (built once). */
export function openApiDocument(): Json {
  document ??= build();
  return document;
}
