/**
 * Lapse values are an open set (spec/expectations-v1.json: an agent receiving an unrecognised value treats it as
 * `overdue`): the client reads a lapse task and a record whose `lapse` it does not know instead of failing on it, its
 * types say so, and the OpenAPI document takes the value too; the watcher's own schema still knows the three only.
 */
import {
  EXTENSION_URI,
  knownLapseKind,
  lapseOf,
  WatcherClient,
  WatcherValidationError,
  type ExpectationRecord,
  type KnownLapseKind,
  type Lapse,
  type LapseKind,
} from 'expectations-watcher/client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { openApiDocument } from '../../../../src/http/openapi.js';
import { lapseSchema } from '../../../../core/schemas/extension.js';
import { shipmentDelivery } from '../../../support/fixtures.js';
import { validatorOf } from '../../../support/openapi.js';
import { lapseFor } from '../../../support/lapses.js';

/** The expectation that lapses: e1, the delivery of shipment SHP-1. */
const delivery = shipmentDelivery('e1', 'SHP-1', '2026-12-01T00:00:00Z');

/** A lapse as a later watcher might send it: `abandoned` is none of the three this one raises. */
const abandoned: Lapse = lapseFor(delivery, 'abandoned', '2026-12-01T06:00:05Z');

/** The lapse task's message as the watcher sends it (activities/deliver-lapse.ts), in v1.0 ProtoJSON. */
const lapseTask = (lapse: unknown) => ({
  messageId: 'b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8',
  role: 'ROLE_USER',
  contextId: 'ctx-1',
  referenceTaskIds: ['task-1'],
  extensions: [EXTENSION_URI],
  parts: [
    { text: 'expects The shipment is delivered for shipment SHP-1 by 2026-12-01T00:00:00Z: abandoned' },
    { data: lapse },
  ],
  metadata: { [EXTENSION_URI]: { lapse, lapseSkill: 'handle-lapse' } },
});

/** A record of the delivery expectation that lapsed with `lapse`, as `GET /v1/expectations/{id}` answers it. */
const recordWith = (lapse: Lapse): ExpectationRecord => ({
  expectation: delivery,
  projectedDueAt: lapse.projectedDueAt,
  dueAt: lapse.dueAt,
  state: 'lapsed',
  raisedAt: '2026-11-01T00:00:00Z',
  lapse,
  lapses: [{ lapse, delivery: { status: 'delivered', messageId: lapseTask(lapse).messageId, attempts: 1 } }],
  lineage: 0,
  agent: { id: 'shipping-agent' },
  origin: { taskId: 'task-1', contextId: 'ctx-1' },
});

describe('the client reading lapses', () => {
  it('reads a lapse task whose lapse it does not know, as it is', () => {
    const lapse = lapseOf(lapseTask(abandoned));

    expect(lapse).toEqual(abandoned);
  });

  it('acts on an unknown lapse as overdue, and on a known one as itself', () => {
    expect(knownLapseKind(abandoned)).toBe('overdue');
    expect(knownLapseKind('abandoned')).toBe('overdue');
    expect(knownLapseKind({ ...abandoned, lapse: 'skipped' })).toBe('skipped');
    expect(knownLapseKind('stalled')).toBe('stalled');
  });

  it('answers undefined for a message that carries no lapse', () => {
    expect(lapseOf({ metadata: { [EXTENSION_URI]: { facts: [] } } })).toBeUndefined();
    expect(lapseOf({ metadata: { other: 1 } })).toBeUndefined();
    expect(lapseOf({})).toBeUndefined();
  });

  it('refuses a malformed lapse, naming each bad field by its path in the message', () => {
    const { lineage: _lineage, ...withoutLineage } = abandoned;

    const error = (() => {
      try {
        lapseOf(lapseTask({ ...withoutLineage, lapse: 42 }));
      } catch (e) {
        return e;
      }
      return undefined;
    })();

    expect(error).toBeInstanceOf(WatcherValidationError);
    const base = 'metadata/https:~1~1rsaxb.com~1a2a~1expectations~1v1/lapse';
    const paths = (error as WatcherValidationError).errors.map((e) => e.path).sort();
    expect(paths).toEqual([`${base}/lapse`, `${base}/lineage`]);
  });

  it('hands back a record with an unknown lapse from getExpectation', async () => {
    const record = recordWith(abandoned);
    const fetch: typeof globalThis.fetch = async () =>
      new Response(JSON.stringify(record), { status: 200, headers: { 'content-type': 'application/json' } });
    const client = new WatcherClient({ baseUrl: 'http://watcher.test:3000', token: 'tok-1', fetch });

    const answer = await client.getExpectation('e1');

    expect(answer.lapse?.lapse).toBe('abandoned');
    expect(answer.lapses[0]?.lapse.lapse).toBe('abandoned');
  });

  it('types a lapse value as the known three or any string', () => {
    expectTypeOf<LapseKind>().toEqualTypeOf<'overdue' | 'skipped' | 'stalled' | (string & {})>();
    expectTypeOf<Lapse['lapse']>().toEqualTypeOf<LapseKind>();
    expectTypeOf<ExpectationRecord['lapses'][number]['lapse']['lapse']>().toEqualTypeOf<LapseKind>();
    expectTypeOf<KnownLapseKind>().toEqualTypeOf<'overdue' | 'skipped' | 'stalled'>();
  });
});

describe('the OpenAPI document on lapses', () => {
  const doc = openApiDocument() as Record<string, any>;
  const record = validatorOf(doc, { $ref: '#/components/schemas/ExpectationRecord' });
  const lapse = validatorOf(doc, { $ref: '#/components/schemas/Lapse' });

  it('takes a record and a lapse whose lapse value is none of the known ones', () => {
    expect(record.check(recordWith(abandoned))).toEqual([]);
    expect(lapse.check(abandoned)).toEqual([]);
  });

  it('lists the known values, and still refuses a lapse that is no string', () => {
    expect(doc.components.schemas.Lapse.properties.lapse.anyOf).toEqual([
      { type: 'string', enum: ['overdue', 'skipped', 'stalled'] },
      { type: 'string' },
    ]);
    expect(lapse.check({ ...abandoned, lapse: 42 })).not.toEqual([]);
  });

  it('describes the record the route answers with', () => {
    const answer = doc.paths['/v1/expectations/{id}'].get.responses[200].content['application/json'].schema;

    expect(answer).toEqual({ $ref: '#/components/schemas/ExpectationRecord' });
  });
});

describe("the watcher's own lapse schema", () => {
  it('knows the three lapses it raises and no other', () => {
    expect(lapseSchema.safeParse({ ...abandoned, lapse: 'overdue' }).success).toBe(true);
    expect(lapseSchema.safeParse(abandoned).success).toBe(false);
  });
});
