/**
 * What a worker spends per workflow task, read from a drain on a fresh dev server: the tasks are queued first with no
 * worker polling, then one worker process is started and timed until it has run them all.
 *
 *   npx tsx bench/tools/drain.ts [--raises=1000] [--bundle=plain|tracing] [--raw] [--worker-node-args='--cpu-prof …']
 *
 * - Ours: `--raises` expectations raised through a `src/worker.ts`-less `src/bridge.ts` in batches of 10 (each raise
 *   queues the first task of its expectation, and each router its subscriptions reached one task), then a
 *   `src/worker.ts` as docker-compose.yml runs it (heap bound, cache from the heap) on the prebuilt bundle: `plain`
 *   (what a worker without tracing loads) or `tracing` (the bundle with the OpenTelemetry interceptors, loaded
 *   without tracing, as every worker of the image did before 2026-12-02). Done when the worker's Prometheus metrics
 *   count every task.
 * - `--raw`: as many `sleepWorkflow` starts as ours has tasks, drained by the baseline worker process (with the
 *   watcher worker's heap bound, and so its cache rule); done when its CPU stays under 15 ms a second for 2 s.
 *
 * Prints tasks a second, and CPU of the worker and of the dev server per task. The worker's Node flags
 * (`--worker-node-args`) are for profiling: `--cpu-prof --cpu-prof-dir=<dir>` writes a profile per thread when the
 * worker stops (bench/tools/cpuprofile-summary.py reads it).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config.js';
import { bundleWorkflows } from '../../src/temporal/workflow-bundle.js';
import { startTestAgent } from '../../test/support/agent.js';
import { baselineWorkflowsPath } from '../baseline/paths.js';
import { spawnEntry, type Child } from '../lib/child.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs } from '../lib/proc.js';
import { delay, progress } from '../lib/progress.js';
import { DEPLOYED_WORKER_NODE_OPTIONS } from '../scenarios/scale.js';
import { bundleTo, freePort, startServer, type BenchServer } from '../lib/server.js';
import { routersOf, spawnBaselineWorker, watcherEnv, writeAgentPrincipals } from '../lib/watcher-processes.js';

/** The tasks `raises` raises in batches of 10 queue with no worker polling: one per expectation, one per router. */
const tasksOf = (raises: number, queue: string): number =>
  raises + routersOf(batchKeys(`${runPrefix}-d`, raises / 10, 10), queue).size;

interface Options {
  raises: number;
  bundle: 'plain' | 'tracing';
  raw: boolean;
  workerNodeArgs: string[];
}

function parseArgs(argv: string[]): Options {
  const options: Options = { raises: 1000, bundle: 'plain', raw: false, workerNodeArgs: [] };
  for (const arg of argv) {
    const [key, value] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    if (key === '--raises' && Number(value) >= 10 && Number(value) % 10 === 0) options.raises = Number(value);
    else if (key === '--bundle' && (value === 'plain' || value === 'tracing')) options.bundle = value;
    else if (key === '--raw') options.raw = true;
    else if (key === '--worker-node-args' && value) options.workerNodeArgs = value.split(' ').filter(Boolean);
    else
      throw new Error(
        `unknown or bad option '${arg}': --raises=<a multiple of 10>, --bundle=plain|tracing, --raw, --worker-node-args='…'`,
      );
  }
  return options;
}

interface Drained {
  tasks: number;
  seconds: number;
  workerCpuMs: number;
  serverCpuMs: number;
}

function report(label: string, { tasks, seconds, workerCpuMs, serverCpuMs }: Drained): void {
  const perTask = (ms: number) => (ms / tasks).toFixed(1);
  console.log(
    `${label}: ${tasks} tasks in ${seconds.toFixed(1)} s = ${(tasks / seconds).toFixed(1)}/s; ` +
      `worker CPU ${perTask(workerCpuMs)} ms a task (${(workerCpuMs / 10 / seconds).toFixed(0)} % of a core), ` +
      `dev server ${perTask(serverCpuMs)} ms a task`,
  );
}

/** Starts `worker` on tasks already queued and resolves once `done()` says they have all run. */
async function timeDrain(
  server: BenchServer,
  start: () => Promise<Child>,
  tasks: number,
  done: (worker: Child) => Promise<boolean>,
): Promise<Drained> {
  const worker = await start();
  try {
    const t0 = performance.now();
    const worker0 = cpuMs(worker.pid);
    const server0 = cpuMs(server.embedded!.pid);
    let lastReport = t0;
    while (!(await done(worker))) {
      await delay(1000);
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        progress(`  draining: ${((lastReport - t0) / 1000).toFixed(0)} s`);
      }
    }
    return {
      tasks,
      seconds: (performance.now() - t0) / 1000,
      workerCpuMs: cpuMs(worker.pid) - worker0,
      serverCpuMs: cpuMs(server.embedded!.pid) - server0,
    };
  } finally {
    await worker.stop();
  }
}

async function drainOurs(server: BenchServer, dir: string, options: Options): Promise<Drained> {
  const queue = `${runPrefix}-drain`;
  const env = watcherEnv(server, queue, dir);
  const agent = await startTestAgent();
  const principalsFile = path.join(dir, 'principals.json');
  const token = writeAgentPrincipals(principalsFile, agent.cardUrl);
  const bundleFile = path.join(dir, `workflow-bundle.${options.bundle}.js`);
  writeFileSync(bundleFile, await bundleWorkflows({ tracing: options.bundle === 'tracing' }));
  const port = await freePort();
  const bridge = spawnEntry(
    'src/bridge.ts',
    [],
    { ...env, PORT: String(port), WATCHER_PRINCIPALS_FILE: principalsFile },
    path.join(dir, 'bridge.log'),
  );
  try {
    await bridge.waitFor(/bridge listening/);
    const dueAt = monthsAhead();
    progress(`raising ${options.raises} expectations through the bridge, no worker polling`);
    const pool = await runPool(options.raises / 10, 16, (b) =>
      postJson(
        `http://127.0.0.1:${port}/a2a/events`,
        token,
        artifactUpdate(batchOf(`${runPrefix}-d`, b, 10, dueAt), `${runPrefix}-t-${b}`),
      ),
    );
    if (pool.errors.length > 0) throw new Error(`raising failed: ${pool.errors[0]}`);
    const tasks = tasksOf(options.raises, queue);
    const metricsPort = await freePort();
    progress(`starting the worker on the ${options.bundle} bundle; ${tasks} tasks queued`);
    const start = async () => {
      const workerEnv = {
        ...env,
        WATCHER_WORKFLOW_BUNDLE: bundleFile,
        NODE_OPTIONS: DEPLOYED_WORKER_NODE_OPTIONS,
        WATCHER_PRINCIPALS_FILE: principalsFile,
        WATCHER_WORKER_METRICS_PORT: String(metricsPort),
      };
      const worker = spawnEntry('src/worker.ts', [], workerEnv, path.join(dir, 'worker.log'), options.workerNodeArgs);
      await worker.waitFor(/worker running/);
      return worker;
    };
    const ranAll = async () => {
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      let ran = 0;
      for (const line of metrics.split('\n'))
        if (line.startsWith('temporal_workflow_task_execution_latency_count')) ran += Number(line.split(' ').pop());
      return ran >= tasks;
    };
    return await timeDrain(server, start, tasks, ranAll);
  } finally {
    await bridge.stop();
    await agent.close();
  }
}

async function drainRaw(server: BenchServer, dir: string, tasks: number): Promise<Drained> {
  const queue = `${runPrefix}-drain-raw`;
  const connection = await Connection.connect({ address: server.address });
  try {
    const client = new Client({ connection, namespace: server.namespace });
    const bundle = await bundleTo(baselineWorkflowsPath, path.join(dir, 'baseline-bundle.js'));
    const dueMs = Date.parse(monthsAhead());
    progress(`starting ${tasks} sleepWorkflows, no worker polling`);
    const pool = await runPool(tasks, 16, (i) =>
      client.workflow.start('sleepWorkflow', { workflowId: `${queue}-${i}`, taskQueue: queue, args: [dueMs] }),
    );
    if (pool.errors.length > 0) throw new Error(`starts failed: ${pool.errors[0]}`);
    const start = async () => {
      const worker = spawnBaselineWorker({
        server,
        queue,
        bundle,
        logFile: path.join(dir, 'raw-worker.log'),
        nodeOptions: DEPLOYED_WORKER_NODE_OPTIONS,
      });
      await worker.waitFor(/baseline worker running/);
      return worker;
    };
    // The baseline worker has no metrics: it has run them all when it has been quiet for two seconds.
    let last = -1;
    let quiet = 0;
    const wentQuiet = async (worker: Child) => {
      const now = cpuMs(worker.pid);
      quiet = last >= 0 && now - last < 15 ? quiet + 1 : 0;
      last = now;
      return quiet >= 2;
    };
    const drained = await timeDrain(server, start, tasks, wentQuiet);
    // The two quiet seconds are not part of the drain.
    return { ...drained, seconds: drained.seconds - 2 };
  } finally {
    await connection.close();
  }
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'expectations-drain-'));
  const server = await startServer(loadConfig(), dir, 'drain');
  try {
    const tasks = tasksOf(options.raises, `${runPrefix}-drain`);
    if (options.raw) report('raw', await drainRaw(server, dir, tasks));
    else report(`ours (${options.bundle} bundle)`, await drainOurs(server, dir, options));
  } finally {
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
