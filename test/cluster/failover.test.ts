/**
 * Two of everything, one killed (issue 47, item 2), the short version: two bridges and two workers, each a process of
 * its own (`src/bridge.ts`, `src/worker.ts`), on one namespace and task queue of a Temporal cluster (server 1.31 on
 * PostgreSQL, dev/cluster). Clients send raises, their facts and feeds of facts nobody waits on round-robin over the
 * bridges, following Retry-After; one bridge is SIGKILLed mid-traffic and started again, then one worker. Judged as a
 * client can judge it: every request answered and applied, no lapse lost, none under two messageIds, none caused by
 * the backlog. bench/failover.ts runs it longer and says how long the survivors took to catch up.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startTemporalCluster, type TemporalCluster } from '../../dev/cluster/temporal-cluster.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { unique } from '../support/bridge.js';
import { runFailover, startFleet, writeFleetPrincipals, type Fleet, type Tokens } from '../support/failover.js';

const prefix = unique('failover');
// As root, PostgreSQL runs as the `postgres` user: the directory must be searchable by it (mkdtemp makes it 0700).
const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-failover-test-'));
chmodSync(dir, 0o755);
const progress: string[] = [];

let agent: TestAgent | undefined;
let principalsFile: string | undefined;
let tokens: Tokens;
let starting: Promise<TemporalCluster> | undefined;
let fleet: Fleet | undefined;

beforeAll(async () => {
  agent = await startTestAgent();
  const principals = writeFleetPrincipals(agent.cardUrl);
  ({ tokens, principalsFile } = principals);
  starting = startTemporalCluster({ dir: path.join(dir, 'cluster'), log: (line) => progress.push(line) });
  const cluster = await starting.catch((error: unknown) => {
    throw new Error(`the Temporal cluster did not start (${progress.join('; ')}): ${(error as Error).message}`, {
      cause: error,
    });
  });
  fleet = await startFleet({
    address: cluster.address,
    taskQueue: `${prefix}-queue`,
    principalsFile: principals.principalsFile,
    dataDir: dir,
    workflowBundle: inject('workflowBundlePath'),
  });
}, 300_000);

afterAll(async () => {
  await fleet?.stop();
  // A start still under way (a hook timeout) is awaited: whatever it started is stopped, by it or by us.
  const cluster = await starting?.catch(() => undefined);
  await cluster?.stop();
  await agent?.close();
  rmSync(dir, { recursive: true, force: true });
  if (principalsFile) rmSync(path.dirname(principalsFile), { recursive: true, force: true });
}, 120_000);

it('answers and applies every request, and delivers every lapse once, when a bridge then a worker is SIGKILLed', async () => {
  const { plan, sent, verdict } = await runFailover(fleet!, agent!, tokens, {
    prefix,
    durationMs: 40_000,
    raiseEveryMs: 2_000,
    feedEveryMs: 1_000,
    feedSize: 5,
    killBridgeAtMs: 10_000,
    killWorkerAtMs: 22_000,
    giveUpMs: 120_000,
    judgeWaitMs: 90_000,
  });

  const { notApplied, wrongState, lost, doubled, backlog, counts } = verdict;
  expect({ notApplied, wrongState, lost, doubled, backlog }).toEqual({
    notApplied: [],
    wrongState: [],
    lost: [],
    doubled: [],
    backlog: [],
  });
  // The kill reached the clients: some requests met the dead bridge and were sent again.
  expect(sent.filter((s) => s.exchange.retries.some((r) => r.startsWith('fetch failed'))).length).toBeGreaterThan(0);
  expect(counts.lapsed).toBe(plan.lapsing.length);
  expect(verdict.lapses).toHaveLength(plan.lapsing.length);
  expect(plan.lapsing.length).toBeGreaterThan(0);
  expect(counts.factBeforeDeadline).toBeGreaterThan(0);
  expect(counts.factBeforeDeadline + counts.factAfterDeadline).toBe(plan.satisfied.length);
  expect(counts.probes).toBeGreaterThan(0);
  expect(counts.facts).toBeGreaterThan(counts.raised + counts.probes);
}, 300_000);
