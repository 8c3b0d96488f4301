/**
 * What the benchmark sends: the tests' `delivery` expectations in their A2A v1.0 artifact updates
 * (test/support/fixtures.ts), and facts. Ids carry the run's prefix so that runs against a shared server never collide.
 */
import type { Expectation } from '../../core/schemas/extension.js';
import { artifactUpdate as update, deliveryExpectation } from '../../test/support/fixtures.js';
import { unique } from '../../test/support/ids.js';

export const runPrefix = unique('bench');

/** An RFC 3339 UTC instant without milliseconds. */
export const instant = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** The next whole second at or after `ms`: an instant that `instant` writes without rounding it down. */
export const ceilSecond = (ms: number): number => Math.ceil(ms / 1000) * 1000;

/** Due about six months from now: never lapses during a run. */
export const monthsAhead = (): string => instant(Date.now() + 182 * 24 * 3600 * 1000);

/** One expectation on shipment `subjectId`; its fact key (`factKeyOf(id)`) is unique to it. */
export const expectationFor = (id: string, subjectId: string, dueAt: string, grace?: string): Expectation =>
  deliveryExpectation(id, dueAt, {
    subject: { type: 'shipment', id: subjectId },
    expects: 'The shipment is delivered to the consignee',
    ...(grace ? { grace } : {}),
  });

/** The fact key an expectation of `expectationFor` waits on (deliveryExpectation's). */
export const factKeyOf = (expectationId: string): string => `shipment/${expectationId}/delivered`;

/** The artifact update carrying the expectations from the origin task `taskId`, in the context `ctx-<taskId>`. */
export const artifactUpdate = (expectations: Expectation[], taskId: string) =>
  update({ expectations }, taskId, `ctx-${taskId}`);

/** A batch of `size` expectations on one subject `<prefix>-S<batch>`, ids `<prefix>-<batch>-<i>`. */
export function batchOf(prefix: string, batch: number, size: number, dueAt: string, grace?: string): Expectation[] {
  const subjectId = `${prefix}-S${batch}`;
  return Array.from({ length: size }, (_, i) => expectationFor(`${prefix}-${batch}-${i}`, subjectId, dueAt, grace));
}

/** The fact keys of `batches` batches of `size` raised with `batchOf(prefix, b, size, …)`, b from 0. */
export const batchKeys = (prefix: string, batches: number, size: number): string[] =>
  Array.from({ length: batches * size }, (_, i) => factKeyOf(`${prefix}-${Math.floor(i / size)}-${i % size}`));
