/**
 * The search attributes of DESIGN 6 on a namespace: checked, and registered where missing, by the worker at boot.
 * Where the worker may not register them (PERMISSION_DENIED, as on Temporal Cloud, where they are created with tcld)
 * it goes on only when they already exist with the right types, and otherwise says how to create them.
 */
import { isGrpcServiceError, type Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;
import { allSearchAttributes } from '../../workflows/search-attributes.js';

export * from '../../workflows/search-attributes.js';

type IndexedValueType = proto.temporal.api.enums.v1.IndexedValueType;
type Key = (typeof allSearchAttributes)[number];

/** The namespace's index type of each search attribute type we use. */
export const indexedValueType: Record<string, IndexedValueType> = {
  [SearchAttributeType.KEYWORD]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  [SearchAttributeType.DATETIME]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  [SearchAttributeType.BOOL]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
};

/** The type names `temporal server start-dev --search-attribute` and `temporal operator search-attribute` take. */
export const searchAttributeTypeName: Record<string, string> = {
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.DATETIME]: 'Datetime',
  [SearchAttributeType.BOOL]: 'Bool',
};

/** The type as Temporal's CLI and tcld spell it: `Keyword`, `Datetime`, `KeywordList`, ... */
function typeName(type: IndexedValueType): string {
  const constant = temporal.api.enums.v1.IndexedValueType[type] ?? String(type);
  return constant
    .replace(/^INDEXED_VALUE_TYPE_/, '')
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_, _separator: string, letter: string) => letter.toUpperCase());
}

const typeOf = (key: Key) => typeName(indexedValueType[key.type]!);

/** `--search-attribute` flags for `temporal server start-dev`. */
export function devServerSearchAttributeFlags(): string[] {
  return allSearchAttributes.flatMap((key) => ['--search-attribute', `${key.name}=${typeOf(key)}`]);
}

/**
 * What the worker found or did: all were `present`; the missing ones were `registered`; or `unchecked`, when it may
 * neither list nor register them, with the warning to log.
 */
export type SearchAttributesOutcome =
  { result: 'present' } | { result: 'registered'; added: string[] } | { result: 'unchecked'; warning: string };

/** The namespace cannot hold our expectations' search attributes as it is; the message says how to fix it. */
export class SearchAttributesError extends Error {
  override name = 'SearchAttributesError';
}

/** gRPC status 7: the caller lacks the role (Temporal's authorizer answers it, so does Temporal Cloud). */
const PERMISSION_DENIED = 7;
const isPermissionDenied = (error: unknown): error is Error & { code: number; details: string } =>
  isGrpcServiceError(error) && error.code === PERMISSION_DENIED;

/**
 * Adds whichever of our search attributes the namespace lacks (DESIGN 6); throws a SearchAttributesError when one has
 * another type or adding them is refused, and resolves `unchecked` when they may not even be listed.
 */
export async function registerSearchAttributes(
  connection: Connection,
  namespace: string,
): Promise<SearchAttributesOutcome> {
  let existing: Map<string, IndexedValueType> | undefined;
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    existing = new Map(Object.entries({ ...listed.systemAttributes, ...listed.customAttributes }));
  } catch (error) {
    if (!isPermissionDenied(error)) throw error;
  }
  const mistyped = allSearchAttributes.filter(
    (key) => existing?.has(key.name) && existing.get(key.name) !== indexedValueType[key.type],
  );
  if (mistyped.length > 0) throw new SearchAttributesError(mistypedMessage(namespace, mistyped, existing!));
  const missing = allSearchAttributes.filter((key) => !existing?.has(key.name));
  if (missing.length === 0) return { result: 'present' };
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((key) => [key.name, indexedValueType[key.type]!])),
    });
    return { result: 'registered', added: missing.map((key) => key.name) };
  } catch (error) {
    if (!isPermissionDenied(error)) throw error;
    if (existing === undefined) {
      return {
        result: 'unchecked',
        warning:
          `may neither list nor register search attributes on namespace "${namespace}" ` +
          `(PERMISSION_DENIED: ${error.details}); going on as if they exist. If they do not, every expectation's ` +
          `workflow task fails until they are created:\n${howToCreate(namespace, missing)}`,
      };
    }
    throw new SearchAttributesError(
      `namespace "${namespace}" lacks the search attributes ${missing.map((key) => key.name).join(', ')} and this ` +
        `worker may not create them (PERMISSION_DENIED: ${error.details}). Create them once, then start the worker ` +
        `again:\n${howToCreate(namespace, missing)}`,
    );
  }
}

/** The command lines that create `keys` on Temporal Cloud and on a self-hosted cluster. */
function howToCreate(namespace: string, keys: readonly Key[]): string {
  const tcld = keys.map((key) => ` --search-attribute "${key.name}=${typeOf(key)}"`).join('');
  // The CLI pairs each --name with the --type that follows it (a single --type would create the first name only).
  const cli = keys.map((key) => ` --name ${key.name} --type ${typeOf(key)}`).join('');
  return [
    '  on Temporal Cloud (an account or namespace admin):',
    `    tcld namespace search-attributes add --namespace ${namespace}${tcld}`,
    '  on a self-hosted cluster (a namespace admin):',
    `    temporal operator search-attribute create --namespace ${namespace}${cli}`,
  ].join('\n');
}

function mistypedMessage(namespace: string, mistyped: readonly Key[], existing: Map<string, IndexedValueType>): string {
  const lines = mistyped.map(
    (key) => `  ${key.name} is ${typeName(existing.get(key.name)!)}; the watcher needs ${typeOf(key)}`,
  );
  return (
    `namespace "${namespace}" has search attributes of the watcher's names with other types, which the worker ` +
    `cannot change:\n${lines.join('\n')}\nUse another namespace, or rename or remove them there ` +
    '(tcld namespace search-attributes rename; temporal operator search-attribute remove) and start the worker again.'
  );
}
