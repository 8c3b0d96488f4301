/**
 * Registers the search attributes of DESIGN 6 on a namespace, idempotently (the worker does it at boot).
 */
import type { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import proto from '@temporalio/proto';

const { temporal } = proto;
import { allSearchAttributes } from '../../workflows/search-attributes.js';

export * from '../../workflows/search-attributes.js';

/** The namespace's index type of each search attribute type we use. */
export const indexedValueType: Record<string, proto.temporal.api.enums.v1.IndexedValueType> = {
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

/** `--search-attribute` flags for `temporal server start-dev`. */
export function devServerSearchAttributeFlags(): string[] {
  return allSearchAttributes.flatMap((key) => [
    '--search-attribute',
    `${key.name}=${searchAttributeTypeName[key.type]!}`,
  ]);
}

/** Adds whichever of our search attributes the namespace lacks; leaves the others alone. */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set([
    ...Object.keys(existing.customAttributes ?? {}),
    ...Object.keys(existing.systemAttributes ?? {}),
  ]);
  const missing = allSearchAttributes.filter((key) => !known.has(key.name));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(missing.map((key) => [key.name, indexedValueType[key.type]!])),
  });
  return missing.map((key) => key.name);
}
