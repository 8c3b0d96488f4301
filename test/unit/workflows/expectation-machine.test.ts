/**
 * The expectation's state machine (workflows/expectation-machine.ts) without a server: each transition, each lapse
 * decision and each refusal, on a clock the test moves, with the calls it makes on the workflow around it in order.
 */
import { describe, expect, it } from 'vitest';
import { EXPECTATION_ENDED, INVALID_EXPECTATION, LAPSE_NOT_FOUND } from '../../../core/failures.js';
import { lapseMessageId } from '../../../core/message-id.js';
import type { Expectation } from '../../../core/types.js';
import { ExpectationMachine, initialRecord, type ExpectationPorts } from '../../../workflows/expectation-machine.js';
import type { ExpectationInput, RoutedFact } from '../../../workflows/messages.js';
import { defaultSettings, expectationInput, shipmentDelivery } from '../../support/fixtures.js';

const RAISED = Date.parse('2026-12-01T00:00:00Z');
const HOUR = 3_600_000;
const SETTLE = 3_000;
/** defaultSettings' factRetention, P7D. */
const RETENTION_MS = 7 * 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();
const KEY = 'shipment/S1/delivered';

function inputOf(extra: Partial<Expectation> = {}): ExpectationInput {
  const expectation = shipmentDelivery('e1', 'S1', iso(RAISED + HOUR), extra);
  const input = expectationInput(expectation, { id: 'agent-1' }, { taskId: 't1', contextId: 'c1' }, 'q');
  return { ...input, raisedAt: iso(RAISED), settings: { ...defaultSettings, settle: 'PT3S' } };
}

/** A machine on a clock the test sets (`at`), recording what it asks of the workflow. */
function machineOf(extra: Partial<Expectation> = {}, input = inputOf(extra)) {
  const clock = { ms: RAISED };
  const calls: string[] = [];
  const ports: ExpectationPorts = {
    now: () => clock.ms,
    deliver: (entry) => calls.push(`deliver ${entry.lapse.lapse}`),
    abandon: (reason) => calls.push(`abandon: ${reason}`),
    resend: (entry, by) => calls.push(`resend ${entry.lapse.lapse} for ${by}`),
    publish: () => calls.push(`publish ${machine.record.state}`),
    supersededBy: (workflowId) => calls.push(`superseded by ${workflowId}`),
  };
  const machine = new ExpectationMachine(input, ports);
  const at = (ms: number) => {
    clock.ms = ms;
    return machine;
  };
  return { machine, calls, at };
}

const fact = (receivedMs: number | undefined, observedMs = receivedMs ?? RAISED, factKey = KEY): RoutedFact => ({
  factKey,
  observedAt: iso(observedMs),
  source: 'reporter',
  ...(receivedMs === undefined ? {} : { receivedAt: iso(receivedMs) }),
});

/** Runs one turn of the workflow's loop at the clock's instant, with the routers' read answering `stored`. */
function turn(machine: ExpectationMachine, stored = {}) {
  if (machine.readDue()) machine.finishRead(machine.startRead(), stored);
  else machine.releaseHeld();
  machine.raiseDueLapses();
}

describe('a new record', () => {
  it('is open, due at the normalised dueAt, raised at the input instant or else now', () => {
    const input = inputOf();
    const record = initialRecord({ ...input, raisedAt: undefined }, RAISED + 5);

    expect(record).toMatchObject({ state: 'open', dueAt: iso(RAISED + HOUR), raisedAt: iso(RAISED + 5), lapses: [] });
  });

  it.each([
    [{ dueAt: 'not a time' }, 'dueAt is not an instant'],
    [{ grace: 'P999999999Y' }, 'dueAt plus grace (P999999999Y) is not an instant'],
  ])('refuses an input it cannot run with (%j)', (extra, message) => {
    expect(() => initialRecord(inputOf(extra))).toThrow(
      expect.objectContaining({ type: INVALID_EXPECTATION, message }),
    );
  });
});

describe('a fact', () => {
  it('with the key satisfies it, abandons its deliveries and publishes once', () => {
    const { machine, calls, at } = machineOf();

    at(RAISED + 10).applyFact(fact(RAISED + 5), 'router');

    expect(machine.record).toMatchObject({
      state: 'satisfied',
      satisfiedAt: iso(RAISED + 10),
      observedAt: iso(RAISED + 5),
      lastFactAt: iso(RAISED + 5),
      late: false,
    });
    expect(calls).toEqual([
      'abandon: the expectation was satisfied before the lapse task was delivered',
      'publish satisfied',
    ]);
    expect(machine.leaving().routerDroppedIt).toBe(true);
  });

  it('with another key, or after the first, changes nothing', () => {
    const { machine, calls } = machineOf();
    machine.applyFact(fact(RAISED, RAISED, 'shipment/S2/delivered'));
    expect(machine.record.state).toBe('open');

    machine.applyFact(fact(RAISED + 1));
    machine.applyFact(fact(RAISED + 2));
    expect(machine.record.observedAt).toBe(iso(RAISED + 1));
    expect(calls.filter((call) => call.startsWith('publish'))).toHaveLength(1);
  });

  it('observed after the current dueAt is late', () => {
    const { machine } = machineOf();
    machine.applyFact(fact(RAISED + 1, RAISED + 2 * HOUR));
    expect(machine.record.late).toBe(true);
  });

  it('received after a deadline still being settled is held until its read, and comes after the lapse', () => {
    const { machine, calls, at } = machineOf();
    const late = fact(RAISED + HOUR + 1);

    at(RAISED + HOUR + 2).applyFact(late);
    expect(machine.holds(late)).toBe(true);
    expect(machine.state.changes).toBe(1);
    expect(machine.mayClose()).toBe(false);
    expect(machine.quiescent()).toBe(false);
    expect(calls).toEqual([]);

    turn(at(RAISED + HOUR + SETTLE));

    expect(machine.holds(late)).toBe(false);
    expect(machine.record).toMatchObject({ state: 'satisfied', late: true });
    expect(machine.record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['overdue']);
    expect(calls).toEqual([
      'deliver overdue',
      'publish lapsed',
      'abandon: the expectation was satisfied before the lapse task was delivered',
      'publish satisfied',
    ]);
  });

  it('received before the deadline satisfies it without a lapse, however late it reaches the workflow', () => {
    const { machine, at } = machineOf();
    at(RAISED + HOUR + 2 * SETTLE).applyFact(fact(RAISED + HOUR - 1));
    expect(machine.record.state).toBe('satisfied');
    expect(machine.record.lapses).toEqual([]);
  });

  it('that no bridge stamped says nothing about deadlines and is applied at once', () => {
    const { machine, at } = machineOf();
    at(RAISED + HOUR + 1).applyFact(fact(undefined));
    expect(machine.record.state).toBe('satisfied');
  });
});

describe('the overdue', () => {
  it('waits the settle interval past due plus grace', () => {
    const { machine, at } = machineOf({ grace: 'PT1H' });
    expect(machine.nextDeadline()).toEqual({ kind: 'overdue', atMs: RAISED + 2 * HOUR + SETTLE });

    turn(at(RAISED + 2 * HOUR + SETTLE - 1));
    expect(machine.record.state).toBe('open');
  });

  it('reads the key and the subject routers first, once per dueAt', () => {
    const { machine, at } = machineOf();
    at(RAISED + HOUR + SETTLE);
    expect(machine.readDue()).toBe(true);

    const read = machine.startRead();

    expect(read).toEqual({
      stalled: false,
      input: {
        expectationWorkflowId: machine.input.links.self,
        sinceMs: RAISED,
        untilMs: RAISED + HOUR + SETTLE,
        key: {
          routerWorkflowId: machine.input.links.factRouter,
          factKey: KEY,
          untilMs: RAISED + HOUR,
          // The early facts' window: the router's retention before the raise (DESIGN 3.2).
          earliestMs: RAISED - RETENTION_MS,
        },
        subject: { routerWorkflowId: machine.input.links.subjectRouter, subject: { type: 'shipment', id: 'S1' } },
      },
    });
    expect(machine.readDue()).toBe(false);
  });

  it('is raised when the read finds no fact: an entry with its messageId, delivered', () => {
    const { machine, calls, at } = machineOf();
    const latest = { ...fact(RAISED + 1), subject: { type: 'shipment', id: 'S1' }, receivedAt: iso(RAISED + 1) };

    turn(at(RAISED + HOUR + SETTLE), { subject: { latest } });

    expect(machine.record.state).toBe('lapsed');
    expect(machine.record.lapse).toMatchObject({ lapse: 'overdue', lapsedAt: iso(RAISED + HOUR + SETTLE) });
    expect(machine.record.lapse?.lastFactAt).toBe(iso(RAISED + 1));
    expect(machine.record.lapses[0]!.delivery).toEqual({
      status: 'pending',
      messageId: lapseMessageId('e1', 'overdue', iso(RAISED + HOUR)),
    });
    expect(calls).toEqual(['deliver overdue', 'publish lapsed']);
    expect(machine.nextDeadline()?.kind).toBe('close');
  });

  it('gives way to a fact the read finds stored by due plus grace', () => {
    const { machine, calls, at } = machineOf();
    turn(at(RAISED + HOUR + SETTLE), { fact: fact(RAISED + HOUR - 10) });

    expect(machine.record.state).toBe('satisfied');
    expect(machine.leaving().routerDroppedIt).toBe(false);
    expect(calls).not.toContain('deliver overdue');
  });

  it('is raised again for a dueAt the anchor moved', () => {
    const anchored = machineOf({ anchor: { expectationId: 'a', offset: 'PT1H' } });
    const { machine, at } = anchored;
    turn(at(RAISED + HOUR + SETTLE));
    at(RAISED + HOUR + SETTLE + 1).applyAnchor(iso(RAISED + HOUR));

    expect(machine.record.dueAt).toBe(iso(RAISED + 2 * HOUR));
    turn(at(RAISED + 2 * HOUR + SETTLE));
    expect(machine.record.lapses.map((entry) => entry.lapse.dueAt)).toEqual([
      iso(RAISED + HOUR),
      iso(RAISED + 2 * HOUR),
    ]);
  });
});

describe('the stall', () => {
  const horizon = { horizon: iso(RAISED + HOUR / 2) };

  it('is ruled out by a fact on the subject by the horizon, and checked only once', () => {
    const { machine, at } = machineOf(horizon);
    at(RAISED + HOUR / 2 + SETTLE);
    const read = machine.startRead();
    expect(read.stalled).toBe(true);
    expect(read.input.subject?.horizonMs).toBe(RAISED + HOUR / 2);

    machine.finishRead(read, { subject: { heardByHorizon: true } });
    machine.raiseDueLapses();

    expect(machine.state.horizonChecked).toBe(true);
    expect(machine.record.lapses).toEqual([]);
    expect(machine.nextDeadline()?.kind).toBe('overdue');
  });

  it('is raised when nothing was heard on the subject by the horizon', () => {
    const { machine, at } = machineOf(horizon);
    turn(at(RAISED + HOUR / 2 + SETTLE));
    expect(machine.record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['stalled']);
    expect(machine.state.horizonChecked).toBe(true);
  });
});

describe('a skipped lapse', () => {
  it('gathers the later expectations satisfied within the settle interval into one', () => {
    const { machine, at } = machineOf();
    at(RAISED + 10).skip({ satisfiedExpectationId: 'e2', receivedAt: iso(RAISED + 5) });
    at(RAISED + 20).skip({ satisfiedExpectationId: 'e3' });
    at(RAISED + 30).skip({ satisfiedExpectationId: 'e2' });
    expect(machine.nextDeadline()).toEqual({ kind: 'skipped', atMs: RAISED + 10 + SETTLE });
    expect(machine.quiescent()).toBe(false);

    turn(at(RAISED + 10 + SETTLE));

    expect(machine.record.lapse).toMatchObject({ lapse: 'skipped', satisfiedAfter: ['e2', 'e3'] });
    expect(machine.quiescent()).toBe(true);
  });

  it('leaves out those whose facts a bridge received after this one’s own', () => {
    const { machine, at } = machineOf();
    at(RAISED + 10).skip({ satisfiedExpectationId: 'e2', receivedAt: iso(RAISED + 5) });
    at(RAISED + 11).skip({ satisfiedExpectationId: 'e3', receivedAt: iso(RAISED + 9) });

    at(RAISED + 12).applyFact(fact(RAISED + 7));

    expect(machine.record.lapses.map((entry) => entry.lapse.satisfiedAfter)).toEqual([['e2']]);
    expect(machine.record.state).toBe('satisfied');
  });

  it('is not gathered once the expectation is satisfied', () => {
    const { machine } = machineOf();
    machine.applyFact(fact(RAISED));
    machine.skip({ satisfiedExpectationId: 'e2' });
    expect(machine.state.settling.skip).toBeUndefined();
  });
});

describe('withdraw', () => {
  it('withdraws an open expectation for its successor, and abandons its deliveries', () => {
    const { machine, calls } = machineOf();
    const answer = machine.withdraw({
      reason: 'r',
      supersededBy: { expectationId: 'e9', workflowId: 'expectation:e9' },
    });

    expect(answer).toBe('withdrawn');
    expect(machine.record).toMatchObject({ state: 'withdrawn', withdrawnReason: 'r', supersededBy: 'e9' });
    expect(calls).toEqual([
      'superseded by expectation:e9',
      'abandon: the expectation was withdrawn before the lapse task was delivered',
      'publish withdrawn',
    ]);
    expect(machine.mayClose()).toBe(true);
  });

  it('answers not-open for one satisfied or withdrawn already', () => {
    const { machine } = machineOf();
    machine.applyFact(fact(RAISED));
    expect(machine.withdraw({ reason: 'r' })).toBe('not-open');
    expect(machine.record.state).toBe('satisfied');
  });
});

describe('a resend', () => {
  function lapsed() {
    const made = machineOf();
    turn(made.at(RAISED + HOUR + SETTLE));
    return { ...made, entry: made.machine.record.lapses[0]! };
  }

  it('is refused for a messageId the expectation has no lapse of', () => {
    const { machine } = lapsed();
    expect(() => machine.validateResend({ messageId: 'nope', requestedBy: 'admin' })).toThrow(
      expect.objectContaining({ type: LAPSE_NOT_FOUND }),
    );
  });

  it('answers a pending delivery as it is and sends nothing', () => {
    const { machine, calls, entry } = lapsed();
    expect(machine.resendLapse({ messageId: entry.delivery.messageId, requestedBy: 'admin' }).result).toBe('pending');
    expect(calls).not.toContain('resend overdue for admin');
  });

  it('delivers a failed lapse again while the expectation lives on', () => {
    const { machine, calls, entry } = lapsed();
    entry.delivery = { ...entry.delivery, status: 'failed', error: 'refused' };

    expect(machine.resendLapse({ messageId: entry.delivery.messageId, requestedBy: 'admin' }).result).toBe('resent');
    expect(calls.slice(-2)).toEqual(['resend overdue for admin', 'publish lapsed']);
  });

  it.each([
    ['satisfied', (machine: ExpectationMachine) => machine.applyFact(fact(RAISED + 1)), /is satisfied/],
    ['closing', (machine: ExpectationMachine) => void machine, /its late window has ended/],
  ])('is refused once the expectation has ended (%s)', (_, end, message) => {
    const { machine, entry, at } = lapsed();
    entry.delivery = { ...entry.delivery, status: 'abandoned', error: 'gone' };
    end(at(RAISED + HOUR + SETTLE + 31 * 24 * HOUR));

    expect(() => machine.validateResend({ messageId: entry.delivery.messageId, requestedBy: 'admin' })).toThrow(
      expect.objectContaining({ type: EXPECTATION_ENDED, message: expect.stringMatching(message) }),
    );
  });
});

describe('closing', () => {
  it('comes the late window after the last lapse, not before', () => {
    const { at } = machineOf();
    turn(at(RAISED + HOUR + SETTLE));
    expect(at(RAISED + HOUR + SETTLE + 30 * 24 * HOUR - 1).mayClose()).toBe(false);
    expect(at(RAISED + HOUR + SETTLE + 30 * 24 * HOUR).mayClose()).toBe(true);
  });

  it('stores a satisfying fact that named another subject on its own subject', () => {
    const { machine, at } = machineOf();
    at(RAISED + 20).applyFact({ ...fact(RAISED + 10), subject: { type: 'order', id: 'O1' } });

    expect(machine.leaving()).toEqual({
      routerDroppedIt: false,
      heard: {
        subject: { type: 'shipment', id: 'S1' },
        factKey: KEY,
        observedAt: iso(RAISED + 10),
        receivedAt: iso(RAISED + 10),
      },
    });
  });

  it('stamps the record with the close instant', () => {
    const { at } = machineOf();
    expect(at(RAISED + 7).close().closedAt).toBe(iso(RAISED + 7));
  });
});

describe('continue-as-new', () => {
  it('resumes from the carried record and horizon check', () => {
    const first = machineOf({ horizon: iso(RAISED + HOUR / 2) });
    turn(first.at(RAISED + HOUR / 2 + SETTLE));
    const { record, horizonChecked } = first.machine.state;

    const { machine } = machineOf({}, { ...inputOf(), carried: { record, horizonChecked, dependents: [] } });

    expect(machine.record).toBe(record);
    expect(machine.state.horizonChecked).toBe(true);
    expect(machine.nextDeadline()?.kind).toBe('overdue');
  });
});
