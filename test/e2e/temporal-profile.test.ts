/**
 * A team's Temporal profile, the way Temporal's CLI and SDKs read it: a bridge and a worker started with nothing but
 * a config file and TEMPORAL_PROFILE connect to the cluster it names (the shared dev server) and raise and satisfy an
 * expectation; `npm start` with the same profile starts no embedded server; a profile that is not there stops a
 * process with an error naming TEMPORAL_PROFILE.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile } from '../support/agents.js';
import { expectation } from '../support/fixtures.js';
import { artifactUpdate, send, unique } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { freePort, freePortPair, isListening } from '../support/net.js';
import { spawnEntry, type Spawned } from '../support/processes.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-profile-'));
const configFile = path.join(dir, 'temporal.toml');
const taskQueue = `profile-${unique()}`;
const tokens = { 'shipping-agent': `agent-${unique()}`, carrier: `carrier-${unique()}`, ops: `ops-${unique()}` };
const running: Spawned[] = [];
let agent: TestAgent;
let principalsFile: string;

beforeAll(async () => {
  // The team's file: its everyday profile points elsewhere; `ci` is the cluster of this run.
  writeFileSync(
    configFile,
    [
      '[profile.default]',
      'address = "127.0.0.1:1"',
      '',
      '[profile.ci]',
      `address = "${inject('temporalAddress')}"`,
      'namespace = "default"',
      '[profile.ci.grpc_meta]',
      'x-watcher-team = "expectations"',
      '',
    ].join('\n'),
  );
  agent = await startTestAgent();
  principalsFile = writePrincipalsFile(
    [
      { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
      { id: 'carrier', roles: ['reporter'] },
      { id: 'ops', roles: ['reader', 'admin'] },
    ],
    { tokens },
  );
});

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await agent?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(path.dirname(principalsFile ?? dir), { recursive: true, force: true });
});

/** An entry point with only the profile (and the watcher's own settings) in its environment. */
function start(script: string, env: Record<string, string>): Spawned {
  const spawned = spawnEntry(script, {
    TEMPORAL_CONFIG_FILE: configFile,
    TEMPORAL_PROFILE: 'ci',
    TEMPORAL_TASK_QUEUE: taskQueue,
    WATCHER_PRINCIPALS_FILE: principalsFile,
    WATCHER_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    WATCHER_WORKER_METRICS_PORT: '0',
    WATCHER_DATA_DIR: mkdtempSync(path.join(dir, 'data-')),
    ...env,
  });
  running.push(spawned);
  return spawned;
}

const settingsLine = `Temporal connection settings from profile \\"ci\\" of ${configFile}`;

describe('a bridge and a worker started with only a config file and TEMPORAL_PROFILE', () => {
  it('connect to the cluster the profile names, raise an expectation and satisfy it from a fact', async () => {
    const port = await freePort();
    const worker = start('src/worker.ts', {});
    const bridge = start('src/bridge.ts', { PORT: String(port) });
    await Promise.all([worker.waitFor(/worker running/), bridge.waitFor(/bridge listening/)]);
    const url = `http://127.0.0.1:${port}`;

    const e = expectation(`profile-${unique()}`);
    const raised = await send(`${url}/a2a/events`, {
      token: tokens['shipping-agent'],
      json: artifactUpdate({ expectations: [e] }),
    });
    const reported = await send(`${url}/v1/facts`, {
      token: tokens.carrier,
      json: { facts: [{ factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString() }] },
    });
    const record = await waitUntil(
      `the record of ${e.expectationId} satisfied`,
      async () => {
        const answer = await send(`${url}/v1/expectations/${e.expectationId}`, { token: tokens.ops });
        return answer.status === 200 && (answer.body as ExpectationRecord).state === 'satisfied'
          ? (answer.body as ExpectationRecord)
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 300 },
    );

    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    expect(raised.body.expectations).toEqual([{ expectationId: e.expectationId, result: 'raised' }]);
    expect(reported.status, JSON.stringify(reported.body)).toBe(200);
    expect(record).toMatchObject({ expectation: { expectationId: e.expectationId }, state: 'satisfied' });
    for (const process of [worker, bridge]) {
      expect(process.output()).toContain(settingsLine);
      expect(process.output()).toContain(`"address":"${inject('temporalAddress')}"`);
      expect(process.output()).toContain('"grpcMetadata":["x-watcher-team"]');
      expect(process.output()).not.toContain('embedded');
    }
    expect(await bridge.stop()).toBe(0);
    expect(await worker.stop()).toBe(0);
  });

  it('stop with an error naming TEMPORAL_PROFILE when the file has no such profile', async () => {
    const worker = start('src/worker.ts', { TEMPORAL_PROFILE: 'staging' });

    expect(await worker.exited).toBe(1);
    expect(worker.output()).toContain(
      `TEMPORAL_PROFILE: no profile "staging" in ${configFile} (it has "default", "ci")`,
    );
  });
});

describe('npm start with a profile', () => {
  it('starts no embedded server: its worker and bridge run on the cluster the profile names', async () => {
    const embeddedPort = await freePortPair();
    const port = await freePort();
    const watcher = start('dev/start.ts', { PORT: String(port), WATCHER_EMBEDDED_TEMPORAL_PORT: String(embeddedPort) });
    await watcher.waitFor(/Ctrl-C stops everything/);

    expect(watcher.output()).toContain(`Temporal:    ${inject('temporalAddress')}  (namespace default)`);
    expect(watcher.output()).toContain(settingsLine);
    expect(watcher.output()).not.toContain('embedded');
    expect(await isListening(embeddedPort)).toBe(false);
    expect(await isListening(embeddedPort + 1000)).toBe(false);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    expect(await watcher.stop('SIGTERM')).toBe(0);
  });
});
