/**
 * Reading a lapse task as the agent receives it (DESIGN 3.8): the Lapse under `metadata[EXTENSION_URI].lapse` of the
 * watcher's message, checked with the extension's schema. Its `lapse` is an open set: a value this client does not
 * know (a later watcher's) is kept as it is, and `knownLapseKind` says what to act on (the seed's rule: `overdue`).
 */
import { EXTENSION_URI, lapseKinds, openLapseSchema } from '../../core/schemas/extension.js';
import { check } from './builders.js';
import type { KnownLapseKind, Lapse, LapseKind } from './types.js';

/** What carries A2A metadata: a v1.0 or v0.3 Message (ProtoJSON or an @a2a-js/sdk object). */
export interface WithMetadata {
  metadata?: Record<string, unknown> | null | undefined;
}

/**
 * The Lapse a lapse task's message carries, or undefined when `metadata[EXTENSION_URI]` holds none; throws a
 * WatcherValidationError (paths under `metadata/<URI>/lapse`) when it is malformed. An unknown `lapse` value is no
 * fault.
 */
export function lapseOf(message: WithMetadata): Lapse | undefined {
  const payload = message.metadata?.[EXTENSION_URI];
  if (typeof payload !== 'object' || payload === null || !('lapse' in payload)) return undefined;
  if (payload.lapse === undefined) return undefined;
  return check('lapse', openLapseSchema, payload.lapse, ['metadata', EXTENSION_URI, 'lapse']);
}

const known: ReadonlySet<string> = new Set(lapseKinds);

/** The lapse an agent acts on: `lapse` when this client knows it, `overdue` for any other. */
export function knownLapseKind(lapse: LapseKind | Lapse): KnownLapseKind {
  const value = typeof lapse === 'string' ? lapse : lapse.lapse;
  return known.has(value) ? (value as KnownLapseKind) : 'overdue';
}
