/**
 * Zod schema of what the watcher reads of an A2A agent card (v1.0 ProtoJSON, v0.3, and @a2a-js/sdk's in-memory form),
 * for the card reader beside it (./card.ts).
 */
import { z } from 'zod';

/** ProtoJSON omits an empty string; the SDK's in-memory objects keep it. Both read as absent. */
const text = z
  .string()
  .optional()
  .transform((value) => value || undefined);

/** The fields of each kind of security scheme, by its v0.3 `type` (the OpenAPI name); other fields are dropped. */
const securitySchemeFields = {
  apiKey: z.object({ description: text, location: z.string(), name: z.string() }),
  http: z.object({ description: text, scheme: z.string(), bearerFormat: text }),
  oauth2: z.object({ description: text, oauth2MetadataUrl: text }),
  openIdConnect: z.object({ description: text, openIdConnectUrl: z.string() }),
  mutualTLS: z.object({ description: text }),
} as const;
type SecuritySchemeType = keyof typeof securitySchemeFields;

/** A security scheme of a card, whichever way the card spelt it; `unrecognized` when it matched no form. */
export type SecuritySchemeInfo =
  | { [T in SecuritySchemeType]: { type: T } & z.infer<(typeof securitySchemeFields)[T]> }[SecuritySchemeType]
  | { type: 'unrecognized' };

/** The `oneof scheme` of A2A v1.0 `SecurityScheme`: its ProtoJSON (and proto) field names, by type. */
const securitySchemeOneof: Record<string, SecuritySchemeType> = {
  apiKeySecurityScheme: 'apiKey',
  api_key_security_scheme: 'apiKey',
  httpAuthSecurityScheme: 'http',
  http_auth_security_scheme: 'http',
  oauth2SecurityScheme: 'oauth2',
  oauth2_security_scheme: 'oauth2',
  openIdConnectSecurityScheme: 'openIdConnect',
  open_id_connect_security_scheme: 'openIdConnect',
  mtlsSecurityScheme: 'mutualTLS',
  mtls_security_scheme: 'mutualTLS',
};

const unrecognized: SecuritySchemeInfo = { type: 'unrecognized' };

function readScheme(type: SecuritySchemeType | undefined, fields: unknown): SecuritySchemeInfo {
  if (type === undefined) return unrecognized;
  const parsed = securitySchemeFields[type].safeParse(fields);
  return parsed.success ? ({ type, ...parsed.data } as SecuritySchemeInfo) : unrecognized;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** One entry of a card's `securitySchemes`, in v1.0 ProtoJSON, v0.3 or @a2a-js/sdk's in-memory form. */
// Never fails: a scheme nobody uses must not make a card unreadable, so an unknown one is `unrecognized`.
export const securitySchemeSchema = z.unknown().transform((entry): SecuritySchemeInfo => {
  if (!isRecord(entry)) return unrecognized;
  const oneof = Object.keys(entry).filter((key) => key in securitySchemeOneof);
  if (oneof.length === 1) return readScheme(securitySchemeOneof[oneof[0]!], entry[oneof[0]!]);
  if (oneof.length > 1) return unrecognized; // a oneof with two members set
  if (isRecord(entry.scheme) && typeof entry.scheme.$case === 'string') {
    return readScheme(securitySchemeOneof[entry.scheme.$case], entry.scheme.value);
  }
  if (typeof entry.type === 'string' && entry.type in securitySchemeFields) {
    const { type, in: location, ...fields } = entry;
    return readScheme(type as SecuritySchemeType, location === undefined ? fields : { ...fields, location });
  }
  return unrecognized;
});

/**
 * One security requirement as scheme name → scopes: v1.0 `{"schemes": {"bearer": {"list": []}}}` (ProtoJSON may
 * omit the empty list), v0.3 `{"bearer": []}`. Null when it is neither.
 */
const securityRequirementSchema = z
  .union([
    z
      .object({ schemes: z.record(z.string(), z.object({ list: z.array(z.string()).optional() })) })
      .transform(({ schemes }) =>
        Object.fromEntries(Object.entries(schemes).map(([name, scopes]) => [name, scopes.list ?? []])),
      ),
    z.record(z.string(), z.array(z.string())),
  ])
  .nullable()
  .catch(null);

/**
 * What the watcher reads of an agent card (A2A v1.0 ProtoJSON; v0.3 accepted): the interfaces or the v0.3 url, the
 * extension declarations, the skill ids and how to authenticate. Lenient about everything else; a malformed
 * security field reads as absent rather than making the card unreadable.
 */
export const agentCardSchema = z.looseObject({
  name: z.string().optional(),
  /** v1.0 */
  supportedInterfaces: z.array(z.looseObject({})).optional(),
  /** v0.3 */
  protocolVersion: z.string().optional(),
  url: z.string().optional(),
  capabilities: z
    .looseObject({
      // Entries stay unread here: only the one with our URI matters (./card.ts), so another extension's entry
      // the watcher cannot read must not make the card unreadable. A list that is not a list holds no entry.
      extensions: z.array(z.unknown()).optional().catch(undefined),
    })
    .optional(),
  skills: z.array(z.looseObject({ id: z.string() })).optional(),
  securitySchemes: z.record(z.string(), securitySchemeSchema).optional().catch(undefined),
  /** v1.0 */
  securityRequirements: z.array(securityRequirementSchema).optional().catch(undefined),
  /** v0.3 */
  security: z.array(securityRequirementSchema).optional().catch(undefined),
});
