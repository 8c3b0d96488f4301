/**
 * Optional OpenTelemetry tracing, on with OTEL_EXPORTER_OTLP_ENDPOINT: a bridge process and a worker process on the
 * shared dev server export to a small OTLP/HTTP receiver, and each workflow a raise through the bridge starts (the
 * expectation and its routers) is one trace from the bridge's StartWorkflow span to the worker's workflow spans.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WatcherClient } from 'expectations-watcher/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { tokenSha256 } from '../../src/auth/principals.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { expectation } from '../support/fixtures.js';
import { artifactUpdate, unique } from '../support/bridge.js';
import { freePort } from '../support/net.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp.js';
import { LOOPBACK_AGENTS_ENV } from '../support/outbound.js';
import { spawnEntry, type Spawned } from '../support/processes.js';

let receiver: OtlpReceiver;
let agent: TestAgent;
const processes: Spawned[] = [];
let bridgeUrl: string;
const token = `agent-${randomUUID()}`;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  const { endpoint } = receiver;
  agent = await startTestAgent();

  const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-tracing-'));
  const principalsFile = path.join(dir, 'principals.json');
  writeFileSync(
    principalsFile,
    JSON.stringify({
      principals: [
        { id: 'shipping-agent', tokenSha256: tokenSha256(token), roles: ['agent'], agent: { cardUrl: agent.cardUrl } },
      ],
    }),
  );
  const common = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `tracing-${randomUUID()}`,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    WATCHER_LOG_LEVEL: 'info',
    ...LOOPBACK_AGENTS_ENV,
  };
  const port = await freePort();
  // The worker delivers lapses to the bridge's agents: the same principals file.
  const worker = spawnEntry('src/worker.ts', {
    ...common,
    WATCHER_WORKER_METRICS_PORT: '0',
    WATCHER_PRINCIPALS_FILE: principalsFile,
  });
  const bridge = spawnEntry('src/bridge.ts', {
    ...common,
    PORT: String(port),
    WATCHER_PRINCIPALS_FILE: principalsFile,
    WATCHER_DATA_DIR: dir,
  });
  processes.push(worker, bridge);
  await Promise.all([
    worker.waitFor(/"msg":"worker running"/, 110_000),
    bridge.waitFor(/"msg":"bridge listening"/, 60_000),
  ]);
  bridgeUrl = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop('SIGTERM')));
  await agent?.close();
  await receiver?.close();
});

describe('OpenTelemetry tracing', () => {
  it('traces each workflow a raise through the bridge starts from the bridge to the worker', async () => {
    const { spans } = receiver;
    const e = expectation(`traced-${unique()}`);
    const watcher = new WatcherClient({ baseUrl: bridgeUrl, token });

    const raised = await watcher.sendEvent(artifactUpdate({ expectations: [e] }));
    // Withdrawn, the workflow closes, and its RunWorkflow span (open as long as the workflow runs) is exported.
    const withdrawn = await watcher.withdraw(e.expectationId, 'tracing test');

    expect([raised.expectations, withdrawn]).toEqual([
      [{ expectationId: e.expectationId, result: 'raised' }],
      { expectationId: e.expectationId, result: 'withdrawn' },
    ]);
    const trace = () => {
      const start = spans.find(
        (s) => s.name === 'StartWorkflow:expectationWorkflow' && s.service === 'expectations-watcher-bridge',
      );
      return start ? { start, spans: spans.filter((s) => s.traceId === start.traceId) } : undefined;
    };
    await expect
      .poll(() => trace()?.spans.some((s) => s.name === 'RunWorkflow:expectationWorkflow'), {
        timeout: 30_000,
        interval: 250,
      })
      .toBe(true);
    const { start, spans: inTrace } = trace()!;
    const run = inTrace.find((s) => s.name === 'RunWorkflow:expectationWorkflow')!;
    expect(run).toMatchObject({ service: 'expectations-watcher-worker', parentSpanId: start.spanId });
    // The workflow's own calls (here the unsubscribe signals its withdrawal sends the routers) are its children.
    const signalOf = () => spans.find((s) => s.traceId === start.traceId && s.name === 'SignalWorkflow:unsubscribe');
    await expect.poll(() => signalOf()?.parentSpanId, { timeout: 15_000 }).toBe(run.spanId);
    expect(signalOf()!.service).toBe('expectations-watcher-worker');
    // The bridge subscribes the expectation by a signal-with-start of its fact router (docs/raise-path.md): traced into
    // the worker, to the router's handling of the subscription (a router runs for ever: its run's span is never
    // exported).
    for (const [call, router, traced] of [
      ['SignalWithStartWorkflow', 'factRouterWorkflow', 'HandleSignal:subscribe'],
    ]) {
      const routerStart = spans.find(
        (s) => s.name === `${call}:${router}` && s.service === 'expectations-watcher-bridge',
      );
      expect(routerStart, router).toBeDefined();
      await expect
        .poll(() => spans.find((s) => s.name === traced && s.parentSpanId === routerStart!.spanId)?.service, {
          timeout: 15_000,
        })
        .toBe('expectations-watcher-worker');
    }
  });
});
