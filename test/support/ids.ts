/**
 * Ids for test data: every file and test on the shared server makes its own, so none collide.
 */
import { randomUUID } from 'node:crypto';

/** A unique suffix for ids (8 hex digits), or `<prefix>-<suffix>` with a prefix. */
export function unique(prefix?: string): string {
  const suffix = randomUUID().slice(0, 8);
  return prefix === undefined ? suffix : `${prefix}-${suffix}`;
}
