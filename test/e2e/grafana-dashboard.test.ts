/**
 * The Grafana dashboard of deploy/grafana names only series the watcher's processes export: a bridge process and a
 * worker process on the shared dev server, a real A2A agent receiving (and once refusing) lapse tasks, and every
 * metric the dashboard's queries read found in one of the two scrapes once the work that makes it has happened.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WatcherClient } from 'expectations-watcher/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tokenSha256 } from '../../src/auth/principals.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation, expectation } from '../support/fixtures.js';
import { artifactUpdate, unique } from '../support/bridge.js';
import { freePort } from '../support/net.js';
import { LOOPBACK_AGENTS_ENV } from '../support/outbound.js';
import { spawnEntry, type Spawned } from '../support/processes.js';

const dashboard = JSON.parse(readFileSync('deploy/grafana/expectations-watcher.json', 'utf8')) as {
  panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
  templating: { list: Array<{ definition?: string }> };
};

/** Every metric name a query of the dashboard reads (its panels and its template variables). */
function namedMetrics(): Set<string> {
  const queries = [
    ...dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr)),
    ...dashboard.templating.list.flatMap((variable) => (variable.definition ? [variable.definition] : [])),
  ];
  return new Set(queries.flatMap((query) => query.match(/\b(?:watcher|temporal)_[a-z0-9_]+/g) ?? []));
}

/** The series names of one Prometheus scrape (`name{labels} value` lines). */
const seriesNames = (text: string) =>
  new Set(
    text
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0]),
  );

let agent: TestAgent;
const processes: Spawned[] = [];
let bridgeUrl: string;
let workerMetricsUrl: string;
const token = `agent-${randomUUID()}`;

beforeAll(async () => {
  agent = await startTestAgent();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-dashboard-'));
  const principalsFile = path.join(dir, 'principals.json');
  const principal = { id: 'dashboard-agent', tokenSha256: tokenSha256(token), roles: ['agent'] };
  writeFileSync(principalsFile, JSON.stringify({ principals: [{ ...principal, agent: { cardUrl: agent.cardUrl } }] }));
  const common = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `dashboard-${randomUUID()}`,
    WATCHER_PRINCIPALS_FILE: principalsFile,
    ...LOOPBACK_AGENTS_ENV,
  };
  const [port, metricsPort] = [await freePort(), await freePort()];
  const worker = spawnEntry('src/worker.ts', { ...common, WATCHER_WORKER_METRICS_PORT: String(metricsPort) });
  const bridge = spawnEntry('src/bridge.ts', { ...common, PORT: String(port), WATCHER_DATA_DIR: dir });
  processes.push(worker, bridge);
  await Promise.all([
    worker.waitFor(/"msg":"worker running"/, 110_000),
    bridge.waitFor(/"msg":"bridge listening"/, 60_000),
  ]);
  bridgeUrl = `http://127.0.0.1:${port}`;
  workerMetricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGTERM')));
  await agent?.close();
});

describe('the Grafana dashboard', () => {
  it('reads only series the bridge and the worker export', async () => {
    const watcher = new WatcherClient({ baseUrl: bridgeUrl, token });
    const satisfied = expectation(`dash-sat-${unique()}`);
    const withdrawn = expectation(`dash-wd-${unique()}`);
    const soon = new Date(Date.now() + 3_000);
    const lapsed = dueExpectation(`dash-lapse-${unique()}`, soon);
    const refused = dueExpectation(`dash-refused-${unique()}`, soon);
    const late = dueExpectation(`dash-late-${unique()}`, new Date(Date.now() + 60_000));
    agent.failNext(400);

    const expectations = [satisfied, withdrawn, lapsed, refused, late];
    const raised = await watcher.sendEvent(artifactUpdate({ expectations }));
    // One fact on time (a year early) and one observed a second after its dueAt (received before it: late, no lapse).
    const fact = (e: typeof satisfied, observedAt: Date) => ({
      factKey: e.satisfiedBy.factKey,
      observedAt: observedAt.toISOString(),
      subject: e.subject,
      source: 'dashboard-test',
    });
    const facts = await watcher.reportFacts([
      fact(satisfied, new Date()),
      fact(late, new Date(Date.parse(late.dueAt) + 1_000)),
    ]);
    await watcher.withdraw(withdrawn.expectationId, 'dashboard test');

    expect(raised.expectations.map((r) => r.result)).toEqual(expectations.map(() => 'raised'));
    expect(facts.facts).toHaveLength(2);
    const named = namedMetrics();
    expect(named.size).toBeGreaterThan(12);
    const missing = async () => {
      const scrapes = await Promise.all(
        [`${bridgeUrl}/metrics`, workerMetricsUrl].map(async (url) => (await fetch(url)).text()),
      );
      const exported = new Set(scrapes.flatMap((text) => [...seriesNames(text)]));
      return [...named].filter((name) => !exported.has(name));
    };
    // The worker's series appear once what they count has happened: two lapses, one refused, three expectations closed (one late).
    await expect.poll(missing, { timeout: 120_000, interval: 1_000 }).toEqual([]);
  }, 180_000);
});
