import { describe, expect, it } from 'vitest';
import { joinBatches, RouterSignals, type RouterBatch } from '../../../../src/temporal/router-signals.js';

const fact = (factKey: string) => ({
  factKey,
  observedAt: '2026-12-07T10:00:00Z',
  source: 'feed',
  receivedAt: '2026-12-07T10:00:01Z',
});
const subjectFact = (factKey: string, receivedAt: string) => ({
  subject: { type: 'shipment', id: 'S-1' },
  factKey,
  observedAt: '2026-12-07T10:00:00Z',
  receivedAt: `2026-12-07T${receivedAt}Z`,
});
const batchOf = (...keys: string[]): RouterBatch => ({ facts: keys.map(fact), retention: 'P7D' });

/** A router signal that waits until the test lets it through (or fails it). */
function gatedSignals(bounds?: { signalBytes: number; waitingBytes: number }) {
  const sent: Array<{ workflowId: string; keys: string[]; release: () => void; fail: (error: Error) => void }> = [];
  const signals = new RouterSignals(
    (workflowId, _shard, batch) =>
      new Promise<void>((resolve, reject) =>
        sent.push({ workflowId, keys: (batch.facts ?? []).map((f) => f.factKey), release: resolve, fail: reject }),
      ),
    bounds,
  );
  return { signals, sent };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('RouterSignals, the group commit of fact batches per router', () => {
  it('signals at once when nothing is in flight to the router', async () => {
    const { signals, sent } = gatedSignals();
    const stored = signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    expect(sent.map((s) => s.keys)).toEqual([['a']]);
    sent[0]!.release();
    await expect(stored).resolves.toBeUndefined();
  });

  it('sends what arrived during a signal in one next signal, in arrival order, and answers each when it is stored', async () => {
    const { signals, sent } = gatedSignals();
    const first = signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    let laterStored = 0;
    const later = [batchOf('b'), batchOf('c', 'd'), batchOf('e')].map((batch) =>
      signals.send('facts:q:001', 1, batch).then(() => laterStored++),
    );
    await tick();
    expect(sent).toHaveLength(1);
    sent[0]!.release();
    await first;
    await tick();
    expect(laterStored).toBe(0);
    expect(sent.map((s) => s.keys)).toEqual([['a'], ['b', 'c', 'd', 'e']]);
    sent[1]!.release();
    await Promise.all(later);
    expect(laterStored).toBe(3);
  });

  it('keeps each router apart: a signal in flight to one does not hold back another', async () => {
    const { signals, sent } = gatedSignals();
    void signals.send('facts:q:001', 1, batchOf('a'));
    void signals.send('facts:q:002', 2, batchOf('b'));
    await tick();
    expect(sent.map((s) => [s.workflowId, s.keys])).toEqual([
      ['facts:q:001', ['a']],
      ['facts:q:002', ['b']],
    ]);
  });

  it('puts no more than its bound of bytes in one signal, and never splits a batch', async () => {
    const bytes = (batch: RouterBatch) => Buffer.byteLength(JSON.stringify(batch));
    const signalBytes = bytes(batchOf('d', 'e')) + bytes(batchOf('f'));
    const { signals, sent } = gatedSignals({ signalBytes, waitingBytes: 1_000_000 });
    void signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    for (const batch of [batchOf('b', 'c'), batchOf('d', 'e'), batchOf('f')])
      void signals.send('facts:q:001', 1, batch);
    sent[0]!.release();
    await tick();
    sent[1]!.release();
    await tick();
    expect(sent.map((s) => s.keys)).toEqual([['a'], ['b', 'c'], ['d', 'e', 'f']]);
  });

  it('refuses at once, as RESOURCE_EXHAUSTED, a batch past what it holds for a router that is slow to answer', async () => {
    const one = Buffer.byteLength(JSON.stringify(batchOf('b')));
    const { signals, sent } = gatedSignals({ signalBytes: 1_000_000, waitingBytes: 2 * one });
    void signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    void signals.send('facts:q:001', 1, batchOf('b'));
    void signals.send('facts:q:001', 1, batchOf('c'));
    await expect(signals.send('facts:q:001', 1, batchOf('d'))).rejects.toMatchObject({
      name: 'RouterQueueFullError',
      code: 8,
    });
    sent[0]!.release();
    await tick();
    expect(sent.map((s) => s.keys)).toEqual([['a'], ['b', 'c']]);
  });

  it('fails only the batches of the signal that failed, and goes on with those that came after', async () => {
    const { signals, sent } = gatedSignals();
    const first = signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    const second = signals.send('facts:q:001', 1, batchOf('b'));
    sent[0]!.fail(new Error('deadline exceeded'));
    await expect(first).rejects.toThrow('deadline exceeded');
    await tick();
    sent[1]!.release();
    await expect(second).resolves.toBeUndefined();
  });
});

describe('RouterSignals: a resend never stores its facts twice', () => {
  it('joins a resend to the store still carrying its facts: no second signal, answered when that one lands', async () => {
    const { signals, sent } = gatedSignals();
    const first = signals.send('facts:q:001', 1, batchOf('a', 'b'));
    await tick();
    let resendStored = false;
    const resend = signals.send('facts:q:001', 1, batchOf('a', 'b')).then(() => (resendStored = true));
    await tick();
    expect(sent).toHaveLength(1);
    expect(resendStored).toBe(false);
    sent[0]!.release();
    await Promise.all([first, resend]);
    expect(resendStored).toBe(true);
    expect(sent).toHaveLength(1);
  });

  it('answers a resend of facts it stored already at once, without a signal', async () => {
    const { signals, sent } = gatedSignals();
    const first = signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    sent[0]!.release();
    await first;
    await expect(signals.send('facts:q:001', 1, batchOf('a'))).resolves.toBeUndefined();
    expect(sent).toHaveLength(1);
  });

  it('sends only the new facts of a request that repeats some, and answers once both stores landed', async () => {
    const { signals, sent } = gatedSignals();
    void signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    let stored = false;
    const mixed = signals.send('facts:q:001', 1, batchOf('a', 'c')).then(() => (stored = true));
    sent[0]!.release();
    await tick();
    expect(sent.map((s) => s.keys)).toEqual([['a'], ['c']]);
    expect(stored).toBe(false);
    sent[1]!.release();
    await mixed;
    expect(stored).toBe(true);
  });

  it('stores again what a failed signal carried: the resend is sent', async () => {
    const { signals, sent } = gatedSignals();
    const first = signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    sent[0]!.fail(new Error('deadline exceeded'));
    await expect(first).rejects.toThrow('deadline exceeded');
    const resend = signals.send('facts:q:001', 1, batchOf('a'));
    await tick();
    expect(sent.map((s) => s.keys)).toEqual([['a'], ['a']]);
    sent[1]!.release();
    await expect(resend).resolves.toBeUndefined();
  });

  it('keeps routers apart, and forgets a fact after its memory: the same fact later is stored again', async () => {
    let nowMs = 0;
    const sent: string[] = [];
    const signals = new RouterSignals(
      async (workflowId, _shard, batch) => void sent.push(`${workflowId} ${(batch.facts ?? []).map((f) => f.factKey)}`),
      undefined,
      { ms: 1_000, entries: 10, now: () => nowMs },
    );
    await signals.send('facts:q:001', 1, batchOf('a'));
    await signals.send('facts:q:002', 2, batchOf('a'));
    nowMs = 500;
    await signals.send('facts:q:001', 1, batchOf('a'));
    nowMs = 1_500;
    await signals.send('facts:q:001', 1, batchOf('a'));
    expect(sent).toEqual(['facts:q:001 a', 'facts:q:002 a', 'facts:q:001 a']);
  });

  it('remembers at most its bound of facts, the oldest forgotten first', async () => {
    const sent: string[] = [];
    const signals = new RouterSignals(
      async (_id, _shard, batch) => void sent.push((batch.facts ?? []).map((f) => f.factKey).join()),
      undefined,
      { ms: 60_000, entries: 2, now: () => 0 },
    );
    for (const key of ['a', 'b', 'c']) await signals.send('facts:q:001', 1, batchOf(key));
    await signals.send('facts:q:001', 1, batchOf('c'));
    await signals.send('facts:q:001', 1, batchOf('a'));
    expect(sent).toEqual(['a', 'b', 'c', 'a']);
  });
});

describe('joinBatches', () => {
  it('keeps each fact once, at its first reception, as a resend that joins its own request’s batch', () => {
    const first = { ...batchOf('a', 'b'), subjects: [subjectFact('a', '10:00:01')] };
    const resend = {
      facts: [{ ...fact('a'), receivedAt: '2026-12-07T10:00:03Z' }, fact('c')],
      subjects: [subjectFact('a', '10:00:03')],
      retention: 'PT1H',
    };
    const joined = joinBatches([first, resend]);
    expect(joined.facts?.map((f) => [f.factKey, f.receivedAt])).toEqual([
      ['a', '2026-12-07T10:00:01Z'],
      ['b', '2026-12-07T10:00:01Z'],
      ['c', '2026-12-07T10:00:01Z'],
    ]);
    expect(joined.subjects?.map((f) => f.receivedAt)).toEqual(['2026-12-07T10:00:01Z']);
    expect(joined.retention).toBe('PT1H');
  });

  it('keeps facts apart that differ in observation or source', () => {
    const other = { ...fact('a'), observedAt: '2026-12-07T10:00:02Z' };
    const claimed = { ...fact('a'), source: 'another-feed' };
    const joined = joinBatches([batchOf('a'), { facts: [other, claimed], retention: 'P7D' }]);
    expect(joined.facts).toHaveLength(3);
  });
});
