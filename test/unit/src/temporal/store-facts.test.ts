import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { storeFacts } from '../../../../src/temporal/expectations.js';

/** A client that records each router signal's deadline (ms from the call) and workflow id, and stores at once. */
function recordingClient() {
  const signals: Array<{ workflowId: string; deadlineInMs: number }> = [];
  let deadline = Number.NaN;
  const client = {
    withDeadline: async <R>(at: number, fn: () => Promise<R>) => {
      deadline = at;
      return fn();
    },
    withAbortSignal: async <R>(_signal: AbortSignal, fn: () => Promise<R>) => fn(),
    workflow: {
      signalWithStart: async (_type: string, options: { workflowId: string }) => {
        signals.push({ workflowId: options.workflowId, deadlineInMs: deadline - Date.now() });
      },
    },
  };
  return { client: client as unknown as Client, signals };
}

const fact = { factKey: 'shipment/SHP-1/delivered', observedAt: '2026-12-07T10:00:00Z', source: 'feed' };

describe('storeFacts: the deadline of a router signal', () => {
  it('is the Temporal wait the caller passes (WATCHER_TEMPORAL_WAIT), not a fixed 30 s', async () => {
    const { client, signals } = recordingClient();
    await storeFacts(client, 'q-wait', [fact], { factRetention: 'P7D', signalDeadlineMs: 5_000 });
    expect(signals).toHaveLength(1);
    expect(signals[0]!.deadlineInMs).toBeGreaterThan(4_000);
    expect(signals[0]!.deadlineInMs).toBeLessThanOrEqual(5_000);
  });

  it("is WATCHER_TEMPORAL_WAIT's default, 30 s, when the caller passes none", async () => {
    const { client, signals } = recordingClient();
    await storeFacts(client, 'q-default', [fact], { factRetention: 'P7D' });
    expect(signals[0]!.deadlineInMs).toBeGreaterThan(29_000);
    expect(signals[0]!.deadlineInMs).toBeLessThanOrEqual(30_000);
  });

  it('keeps one group commit per deadline: two settings on one client never share a signal deadline', async () => {
    const { client, signals } = recordingClient();
    await storeFacts(client, 'q-both', [fact], { factRetention: 'P7D', signalDeadlineMs: 2_000 });
    await storeFacts(client, 'q-both', [fact], { factRetention: 'P7D', signalDeadlineMs: 60_000 });
    expect(signals.map((s) => Math.round(s.deadlineInMs / 1000))).toEqual([2, 60]);
  });
});
