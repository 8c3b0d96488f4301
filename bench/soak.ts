/**
 * `npm run soak` (`-- --minutes N`, default 3; `--rate R` raises per second, default 10; `--sqlite`; `--no-write`):
 * a bounded soak on loopback. One process runs the watcher's worker, the bridge and a real @a2a-js/sdk agent, on an
 * embedded dev server of its own (database in memory; `--sqlite` puts it in a SQLite file as `npm start` does, whose
 * fsync per write caps the rate a small machine sustains) or on the cluster at TEMPORAL_ADDRESS. At a steady rate it raises expectations
 * through the bridge and reports facts for most of them; the rest are left to lapse on short dues. RSS is sampled
 * every 10 s. It passes with zero errors, every expectation in the state it should be in, one lapse task per lapsed
 * expectation, and an RSS over the last third of the load no more than 15 % above the middle third's.
 * Figures are printed and written to bench/results/soak-<date>.json.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { agentDirectory, createPrincipalStore, tokenSha256 } from '../src/auth/principals.js';
import { loadConfig } from '../src/config.js';
import { createApp } from '../src/http/app.js';
import { EXTENSION_URI } from '../core/schemas/extension.js';
import type { ExpectationRecord } from '../core/schemas/record.js';
import { getExpectationRecord } from '../src/temporal/expectations.js';
import { createWatcherWorker } from '../src/temporal/worker.js';
import { workflowsPath } from '../src/temporal/workflows-path.js';
import { startTestAgent } from '../test/support/agent.js';
import { loopbackAgents } from '../test/support/outbound.js';
import { lapseMessageId } from '../core/message-id.js';
import { delay, progress, waitUntil } from './lib/progress.js';
import { bundleTo, freePort, startServer, type BenchServer } from './lib/server.js';
import { startDevServer } from '../dev/temporal/dev-server.js';

interface Options {
  minutes: number;
  rate: number;
  write: boolean;
  /** Put the embedded server's database in a SQLite file (as `npm start` does) instead of memory. */
  sqlite: boolean;
}

function parseArgs(argv: string[]): Options {
  const options: Options = { minutes: 3, rate: 10, write: true, sqlite: false };
  for (let i = 0; i < argv.length; i++) {
    const [key, inline] = argv[i]!.split('=', 2) as [string, string | undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (key === '--minutes') options.minutes = value();
    else if (key === '--rate') options.rate = value();
    else if (key === '--no-write') options.write = false;
    else if (key === '--sqlite') options.sqlite = true;
    else throw new Error(`unknown option ${argv[i]}; see the comment at the top of bench/soak.ts`);
  }
  if (!(options.minutes > 0) || !(options.rate > 0)) throw new Error('--minutes and --rate must be positive numbers');
  return options;
}

/** One expectation of the soak and what should become of it. */
interface Planned {
  id: string;
  factKey: string;
  dueAt: string;
  fate: 'satisfied' | 'lapsed';
}

/** Share of expectations that get their fact; the others lapse. */
const FACT_SHARE = 0.8;
/** Dues: the ones that lapse are due in a few seconds, the ones that get a fact well after it arrives. */
const LAPSE_DUE_MS = [3_000, 8_000] as const;
const SATISFY_DUE_MS = 120_000;
const FACT_DELAY_MS = [300, 3_000] as const;
/** Short enough that ledgers and lapsed expectations close during the soak: the live set reaches a steady state. */
const SETTINGS = { factRetention: 'PT30S', lateWindow: 'PT30S', maxLineage: 10, cardCacheSeconds: 60 };
const SAMPLE_EVERY_MS = 10_000;
const ALLOWED_GROWTH = 0.15;

const between = ([low, high]: readonly [number, number]) => low + Math.random() * (high - low);
const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0);
const percentile = (values: number[], p: number) => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

/** RSS of another process, from /proc (undefined where there is none). */
function rssOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The embedded dev server with its database in memory. */
async function startInMemoryServer(dir: string): Promise<BenchServer> {
  const devServer = await startDevServer({ port: await freePort(), logFile: path.join(dir, 'temporal.log') });
  progress(`soak: embedded dev server on ${devServer.address} (pid ${devServer.pid}, database in memory)`);
  return {
    address: devServer.address,
    namespace: devServer.namespace,
    connectionOptions: {},
    embedded: { devServer, pid: devServer.pid!, dbFile: ':memory:' },
    serverPids: () => (devServer.pid === undefined ? [] : [devServer.pid]),
    stop: () => devServer.stop(),
  };
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // The agent's SDK warns once per lapse about the origin task it never saw: count it instead of printing it.
  let agentReferenceWarnings = 0;
  const warn = console.warn.bind(console);
  console.warn = (...args: unknown[]) => {
    if (/^Reference task .* not found\.$/.test(args.map(String).join(' '))) agentReferenceWarnings++;
    else warn(...args);
  };

  const config = loadConfig();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'expectations-soak-'));
  const server =
    !options.sqlite && !config.temporal.address
      ? await startInMemoryServer(dir)
      : await startServer(config, path.join(dir, 'server'), 'soak');
  const run = randomUUID().slice(0, 8);
  const taskQueue = `soak-${run}`;
  const bundle = await bundleTo(workflowsPath, path.join(dir, 'workflows.js'));
  const agent = await startTestAgent();
  const tokens = { agent: `agent-${randomUUID()}`, feed: `feed-${randomUUID()}` };
  const principals = createPrincipalStore({
    principals: [
      { id: 'soak-agent', tokenSha256: tokenSha256(tokens.agent), roles: ['agent'], agent: { cardUrl: agent.cardUrl } },
      { id: 'soak-feed', tokenSha256: tokenSha256(tokens.feed), roles: ['reporter'] },
    ],
  });
  const watcher = await createWatcherWorker({
    address: server.address,
    namespace: server.namespace,
    taskQueue,
    workflowBundlePath: bundle,
    connectionOptions: server.connectionOptions,
    // The bridge's principals: the agent it raises for is where the lapses go.
    agents: agentDirectory(principals),
    outbound: loopbackAgents,
  });
  const workerRunning = watcher.run();
  const connection = await Connection.connect({ address: server.address, ...server.connectionOptions });
  const client = new Client({ connection, namespace: server.namespace });
  const app = createApp({
    client,
    taskQueue,
    namespace: server.namespace,
    principals,
    settings: SETTINGS,
    outbound: loopbackAgents,
  });
  const http: Server = await new Promise((resolve, reject) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    listening.once('error', reject);
  });
  const bridgeUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  progress(`soak: ${options.minutes} min at ${options.rate} raises/s, bridge ${bridgeUrl}, queue ${taskQueue}`);

  const errors: string[] = [];
  const latency = { raise: [] as number[], fact: [] as number[] };
  const planned: Planned[] = [];
  const inFlight = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  };
  const post = async (url: string, token: string, body: unknown, kind: 'raise' | 'fact'): Promise<any> => {
    const started = performance.now();
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      latency[kind].push(performance.now() - started);
      if (response.status !== 200) {
        errors.push(`${kind} answered ${response.status}: ${text.slice(0, 300)}`);
        return undefined;
      }
      return JSON.parse(text);
    } catch (error) {
      errors.push(`${kind} failed: ${(error as Error).message}`);
      return undefined;
    }
  };

  const raiseOne = async (plan: Planned) => {
    const expectation = {
      expectationId: plan.id,
      kind: 'delivery',
      subject: { type: 'shipment', id: `S-${plan.id}` },
      expects: 'The shipment is delivered',
      satisfiedBy: { factKey: plan.factKey },
      dueAt: plan.dueAt,
      grace: 'PT0S',
      basis: 'contract',
    };
    const body = {
      artifactUpdate: {
        taskId: `task-${plan.id}`,
        contextId: `ctx-${plan.id}`,
        artifact: {
          artifactId: `a-${plan.id}`,
          parts: [{ text: 'plan' }],
          metadata: { [EXTENSION_URI]: { expectations: [expectation] } },
        },
      },
    };
    const answer = await post(`${bridgeUrl}/a2a/events`, tokens.agent, body, 'raise');
    if (answer && answer.expectations?.[0]?.result !== 'raised')
      errors.push(`raise of ${plan.id}: ${JSON.stringify(answer)}`);
    if (!answer || plan.fate !== 'satisfied') return;
    await delay(between(FACT_DELAY_MS));
    const fact = { factKey: plan.factKey, observedAt: new Date().toISOString(), subject: expectation.subject };
    const reported = await post(`${bridgeUrl}/v1/facts`, tokens.feed, { facts: [fact] }, 'fact');
    if (reported && reported.facts?.[0]?.result !== 'recorded')
      errors.push(`fact of ${plan.id}: ${JSON.stringify(reported)}`);
  };

  // Memory: this process (worker, bridge and agent) and the dev server, every 10 s.
  const samples: { atS: number; rssMB: number; heapUsedMB: number; serverRssMB?: number; inFlight: number }[] = [];
  const loadStarted = Date.now();
  const sample = () => {
    const usage = process.memoryUsage();
    const serverRss = rssOf(server.embedded?.pid);
    samples.push({
      atS: Math.round((Date.now() - loadStarted) / 1000),
      rssMB: mb(usage.rss),
      heapUsedMB: mb(usage.heapUsed),
      ...(serverRss !== undefined ? { serverRssMB: mb(serverRss) } : {}),
      inFlight: inFlight.size,
    });
    const last = samples.at(-1)!;
    progress(
      `  ${last.atS}s: raised ${planned.length}, rss ${last.rssMB} MB, heap ${last.heapUsedMB} MB` +
        (last.serverRssMB !== undefined ? `, server ${last.serverRssMB} MB` : '') +
        `, in flight ${last.inFlight}, errors ${errors.length}`,
    );
  };
  const sampler = setInterval(sample, SAMPLE_EVERY_MS);

  // The load: one raise every 1/rate s, on a fixed schedule (a slow answer does not slow the rate).
  const total = Math.round(options.minutes * 60 * options.rate);
  for (let i = 0; i < total; i++) {
    const at = loadStarted + (i * 1000) / options.rate;
    if (at > Date.now()) await delay(at - Date.now());
    const fate = Math.random() < FACT_SHARE ? 'satisfied' : 'lapsed';
    const due = new Date(Date.now() + (fate === 'lapsed' ? between(LAPSE_DUE_MS) : SATISFY_DUE_MS));
    due.setUTCMilliseconds(0);
    const id = `soak-${run}-${i}`;
    const plan: Planned = { id, factKey: `soak/${run}/${i}/delivered`, dueAt: due.toISOString(), fate };
    planned.push(plan);
    track(raiseOne(plan));
  }
  sample();
  const loadSeconds = (Date.now() - loadStarted) / 1000;
  clearInterval(sampler);
  progress(
    `load done: ${planned.length} raised in ${loadSeconds.toFixed(0)} s; waiting for the last answers and lapses`,
  );
  await Promise.all([...inFlight]);

  // Every expectation in the state it should be in, and one lapse task per lapsed expectation.
  const lapsed = planned.filter((p) => p.fate === 'lapsed');
  const lapsesReceived = () => {
    const byId = new Map<string, string[]>();
    for (const received of agent.received) {
      const lapse = received.message?.metadata?.[EXTENSION_URI]?.lapse as { expectationId: string } | undefined;
      if (lapse) byId.set(lapse.expectationId, [...(byId.get(lapse.expectationId) ?? []), received.message.messageId]);
    }
    return byId;
  };
  await waitUntil('every lapse to reach the agent', () => lapsed.every((p) => lapsesReceived().has(p.id)), {
    timeoutMs: 180_000,
    intervalMs: 1_000,
    onTick: () => progress(`  lapses received ${lapsesReceived().size}/${lapsed.length}`),
  }).catch((error: Error) => errors.push(error.message));

  const wrong: string[] = [];
  const check = (plan: Planned, record: ExpectationRecord | undefined): string | undefined => {
    if (!record) return `${plan.id}: no record`;
    if (record.state !== plan.fate) return `${plan.id}: ${record.state}, should be ${plan.fate}`;
    if (plan.fate === 'lapsed' && (record.lapses.length !== 1 || record.lapses[0]!.delivery.status !== 'delivered')) {
      return `${plan.id}: lapses ${JSON.stringify(record.lapses.map((l) => l.delivery.status))}`;
    }
    if (plan.fate === 'satisfied' && record.lapses.length !== 0)
      return `${plan.id}: satisfied but lapsed ${record.lapses.length} times`;
    return undefined;
  };
  let pending = planned;
  const deadline = Date.now() + 180_000;
  while (pending.length > 0 && Date.now() < deadline) {
    const still: Planned[] = [];
    for (let i = 0; i < pending.length; i += 32) {
      const batch = pending.slice(i, i + 32);
      const records = await Promise.all(batch.map((p) => getExpectationRecord(client, p.id).catch(() => undefined)));
      batch.forEach((plan, j) => {
        if (check(plan, records[j])) still.push(plan);
      });
    }
    pending = still;
    if (pending.length > 0) {
      progress(`  ${pending.length} expectations not yet where they should be`);
      await delay(2_000);
    }
  }
  for (const plan of pending)
    wrong.push(check(plan, await getExpectationRecord(client, plan.id).catch(() => undefined)) ?? plan.id);
  const received = lapsesReceived();
  for (const plan of planned) {
    const ids = received.get(plan.id) ?? [];
    if (plan.fate === 'satisfied' && ids.length > 0)
      wrong.push(`${plan.id}: satisfied, yet the agent got ${ids.length} lapse(s)`);
    if (plan.fate === 'lapsed' && ids.length !== 1) wrong.push(`${plan.id}: the agent got ${ids.length} lapse tasks`);
    if (ids.some((messageId) => messageId !== lapseMessageId(plan.id, 'overdue', plan.dueAt)))
      wrong.push(`${plan.id}: unexpected messageId`);
  }

  // Memory: the last third of the load against the middle third (the first third is warm-up).
  const third = Math.floor(samples.length / 3);
  const middle = samples.slice(third, 2 * third).map((s) => s.rssMB);
  const last = samples.slice(2 * third).map((s) => s.rssMB);
  const growth = mean(middle) > 0 ? (mean(last) - mean(middle)) / mean(middle) : 0;
  const memoryOk = samples.length >= 6 && growth <= ALLOWED_GROWTH;

  const figures = {
    startedAt: new Date(loadStarted).toISOString(),
    options,
    settings: SETTINGS,
    temporal: server.embedded
      ? { embedded: true, dbFile: server.embedded.dbFile }
      : { embedded: false, address: server.address },
    machine: { cpus: os.cpus().length, node: process.version, platform: `${os.platform()} ${os.release()}` },
    load: {
      seconds: Math.round(loadSeconds),
      raised: planned.length,
      factsReported: latency.fact.length,
      toLapse: lapsed.length,
      lapseTasksReceived: [...received.values()].reduce((n, ids) => n + ids.length, 0),
      raisesPerSecond: Math.round((planned.length / loadSeconds) * 10) / 10,
    },
    latencyMs: {
      raise: {
        p50: Math.round(percentile(latency.raise, 50)),
        p95: Math.round(percentile(latency.raise, 95)),
        p99: Math.round(percentile(latency.raise, 99)),
        max: Math.round(Math.max(0, ...latency.raise)),
      },
      fact: {
        p50: Math.round(percentile(latency.fact, 50)),
        p95: Math.round(percentile(latency.fact, 95)),
        p99: Math.round(percentile(latency.fact, 99)),
        max: Math.round(Math.max(0, ...latency.fact)),
      },
    },
    errors: { count: errors.length, first: errors.slice(0, 20) },
    states: { wrong: wrong.length, first: wrong.slice(0, 20) },
    memory: {
      samples,
      middleThirdRssMB: Math.round(mean(middle) * 10) / 10,
      lastThirdRssMB: Math.round(mean(last) * 10) / 10,
      growthPct: Math.round(growth * 1000) / 10,
      allowedGrowthPct: ALLOWED_GROWTH * 100,
      ok: memoryOk,
    },
    agentReferenceWarnings,
    passed: errors.length === 0 && wrong.length === 0 && memoryOk,
  };

  process.stdout.write(
    [
      '',
      `soak ${figures.passed ? 'PASSED' : 'FAILED'}: ${figures.load.raised} raised in ${figures.load.seconds} s (${figures.load.raisesPerSecond}/s), ` +
        `${figures.load.factsReported} facts, ${figures.load.toLapse} left to lapse, ${figures.load.lapseTasksReceived} lapse tasks received`,
      `  latency ms  raise p50 ${figures.latencyMs.raise.p50} p95 ${figures.latencyMs.raise.p95} p99 ${figures.latencyMs.raise.p99} max ${figures.latencyMs.raise.max}` +
        ` · fact p50 ${figures.latencyMs.fact.p50} p95 ${figures.latencyMs.fact.p95} p99 ${figures.latencyMs.fact.p99} max ${figures.latencyMs.fact.max}`,
      `  errors ${errors.length} · expectations not in their expected state ${wrong.length}`,
      `  rss MB  middle third ${figures.memory.middleThirdRssMB} · last third ${figures.memory.lastThirdRssMB} · growth ${figures.memory.growthPct} % (allowed ${figures.memory.allowedGrowthPct} %)`,
      ...errors.slice(0, 5).map((e) => `  error: ${e}`),
      ...wrong.slice(0, 5).map((w) => `  wrong: ${w}`),
      '',
    ].join('\n'),
  );
  if (options.write) {
    const resultsDir = path.resolve('bench/results');
    mkdirSync(resultsDir, { recursive: true });
    const file = path.join(resultsDir, `soak-${figures.startedAt.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
    progress(`figures written to ${path.relative(process.cwd(), file)}`);
  }

  await new Promise<void>((resolve) => {
    http.close(() => resolve());
    http.closeAllConnections();
  });
  await watcher.shutdown();
  await workerRunning;
  await connection.close();
  await agent.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
  process.exit(figures.passed ? 0 : 1);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
