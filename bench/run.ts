/**
 * `npm run bench`: the watcher side by side with raw Temporal on the same server in the same run (the embedded dev
 * server unless `--server cluster` or TEMPORAL_ADDRESS). Its options are BENCHMARKS.md's "How to run", said there once.
 * Every result names the commit it measured (`git rev-parse --short HEAD`, `+dirty` with uncommitted changes).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.js';
import { ensureClusterBinaries, TEMPORAL_SERVER_VERSION } from '../dev/temporal/provision-cluster.js';
import { workflowsPath } from '../src/temporal/workflows-path.js';
import { repoRoot } from './lib/child.js';
import { stopOnSignals } from './lib/cleanup.js';
import { describeMachine } from './lib/proc.js';
import { progress } from './lib/progress.js';
import { countAgentConsoleWarnings, installSdkLog, sdkWarnings } from './lib/sdk-log.js';
import { markdown, writeResults, type BenchResults } from './lib/report.js';
import { bundleTo, describeServer, startServer, temporalCliPath, type ServerKind } from './lib/server.js';
import { startStack } from './lib/stack.js';
import { startTrafficRig } from './lib/traffic-rig.js';
import { DEPLOYED_WORKER_NODE_OPTIONS } from './lib/watcher-processes.js';
import { runCost } from './scenarios/cost.js';
import { runFactLatency } from './scenarios/fact-latency.js';
import { runLapseLateness } from './scenarios/lapse-lateness.js';
import { runScale } from './scenarios/scale.js';
import { runThroughput } from './scenarios/throughput.js';
import { runTraffic } from './scenarios/traffic.js';

const SCENARIOS = ['throughput', 'latency', 'lapse', 'scale', 'cost', 'traffic'] as const;
type Scenario = (typeof SCENARIOS)[number];

/** How much of each scenario a quick and a full run do. */
const SIZES = {
  quick: {
    singles: 400,
    batches: 60,
    rawStarts: 600,
    latencySamples: 100,
    lapses: [200],
    scale: 10_000,
    scaleBurst: 200,
    costSamples: 3,
    trafficStepSec: 45,
  },
  full: {
    singles: 2_000,
    batches: 300,
    rawStarts: 3_000,
    latencySamples: 500,
    lapses: [200, 1_000],
    scale: 100_000,
    scaleBurst: 1_000,
    costSamples: 10,
    trafficStepSec: 90,
  },
};
/** What `--set` may override: each size, and `lapse` for the one count of scenario 3. */
type SizeKey = Exclude<keyof (typeof SIZES)['quick'], 'lapses'> | 'lapse';
const SIZE_KEYS = [...Object.keys(SIZES.quick).filter((key) => key !== 'lapses'), 'lapse'] as SizeKey[];

/**
 * Scenario 7's ramp and its bounds: a step's tail (answers still outstanding after its schedule), the wait for the
 * queues to drain, the wait at the end for the lapses still due, and the histories read per step and side. The quick
 * rates bracket the watcher's knee on the dev server on two cores (2026-12-03).
 */
const TRAFFIC = {
  quick: { rates: [2, 4, 8], maxRate: 64, tailMs: 15_000, settleMs: 20_000, lapseWaitMs: 60_000, historyCap: 600 },
  full: {
    rates: [2, 3, 4, 6, 8, 16],
    maxRate: 128,
    tailMs: 60_000,
    settleMs: 120_000,
    lapseWaitMs: 300_000,
    historyCap: 3_000,
  },
};
/** Agents raising in scenario 7, each a principal and an A2A server of its own. */
const TRAFFIC_AGENTS = 3;

const options = {
  quick: false,
  server: 'dev' as ServerKind,
  only: new Set<Scenario>(SCENARIOS),
  concurrency: 16,
  write: true,
  /** Keep the work directory (servers' databases, processes' logs) after a run that did not fail, to read it after. */
  keep: false,
  scaleSides: new Set<'ours' | 'raw'>(['ours', 'raw']),
  sizes: {} as Partial<Record<SizeKey, number>>,
  trafficRates: undefined as number[] | undefined,
  trafficMaxRate: undefined as number | undefined,
  trafficFeedOnly: false,
  scaleState: undefined as string | undefined,
  scaleMinutes: undefined as number | undefined,
};

const positive = (name: string, value = '') => {
  if (!(Number(value) > 0)) throw new Error(`${name}: a positive number, not '${value}'`);
  return Number(value);
};
const listOf = <T extends string>(name: string, allowed: readonly T[], value = ''): T[] => {
  const items = value.split(',').map((item) => item.trim());
  const wrong = items.find((item) => !allowed.includes(item as T));
  if (wrong !== undefined) throw new Error(`${name}: ${allowed.join(', ')}, not '${wrong}'`);
  return items as T[];
};

/** Each option and what it sets from its value (`--name=value`; a flag has none). */
const OPTIONS: Record<string, (value: string | undefined) => void> = {
  '--quick': () => (options.quick = true),
  '--server': (value) => {
    if (value !== 'dev' && value !== 'cluster')
      throw new Error(`--server: dev (the default) or cluster, not '${value}'`);
    options.server = value;
  },
  '--only': (value) => (options.only = new Set(listOf('--only', SCENARIOS, value))),
  '--concurrency': (value) => (options.concurrency = positive('--concurrency', value)),
  '--no-write': () => (options.write = false),
  '--keep': () => (options.keep = true),
  '--scale-sides': (value) => (options.scaleSides = new Set(listOf('--scale-sides', ['ours', 'raw'] as const, value))),
  '--set': (value = '') => {
    for (const pair of value.split(',')) {
      const [name, number] = pair.split('=') as [SizeKey, string | undefined];
      if (!SIZE_KEYS.includes(name) || !(Number(number) > 0)) throw new Error(`--set: bad size '${pair}'`);
      options.sizes[name] = Number(number);
    }
  },
  '--traffic-rates': (value = '') =>
    (options.trafficRates = value.split(',').map((r) => positive('--traffic-rates', r))),
  '--traffic-max-rate': (value) => (options.trafficMaxRate = positive('--traffic-max-rate', value)),
  '--traffic-feed-only': () => (options.trafficFeedOnly = true),
  '--scale-state': (value) => {
    if (!value) throw new Error('--scale-state: a directory, kept between invocations');
    options.scaleState = path.resolve(value);
  },
  '--scale-minutes': (value) => (options.scaleMinutes = positive('--scale-minutes', value)),
};

function parseArgs(argv: string[]): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const at = arg.indexOf('=');
    const key = at === -1 ? arg : arg.slice(0, at);
    const set = OPTIONS[key];
    if (!set) throw new Error(`unknown option ${arg}; see BENCHMARKS.md, "How to run"`);
    // `--server cluster` as well as `--server=cluster`.
    set(at !== -1 ? arg.slice(at + 1) : key === '--server' ? argv[++i] : undefined);
  }
  if (options.scaleMinutes !== undefined && options.scaleState === undefined)
    throw new Error('--scale-minutes: only with --scale-state, where the next invocation goes on');
}

async function main(): Promise<void> {
  parseArgs(process.argv.slice(2));
  const mode = options.quick ? 'quick' : 'full';
  const { lapse, ...overrides } = options.sizes;
  const size = { ...SIZES[mode], ...overrides, ...(lapse ? { lapses: [lapse] } : {}) };
  installSdkLog();
  countAgentConsoleWarnings();
  const config = loadConfig();
  const startedAt = new Date().toISOString();
  const { commit, changedFiles } = commitOf();
  const t0 = Date.now();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'expectations-bench-'));
  const ourCluster = options.server === 'cluster' && !config.temporal.address;
  // As root, the cluster's PostgreSQL runs as the `postgres` user: the directory must be searchable by it.
  if (options.server === 'cluster') chmodSync(dir, 0o755);
  const serverName = describeServer(options.server, config.temporal.address);
  progress(`${mode} run of ${[...options.only].join(', ')} at ${commit} on the ${serverName}; work directory ${dir}`);
  const machine = describeMachine(config.temporal.address || ourCluster ? undefined : temporalCliPath());
  if (ourCluster) machine.temporal = clusterVersions();
  progress(
    `machine: ${machine.cpus} cores, ${machine.memoryGiB} GiB, node ${machine.node}, ${machine.temporal.split('\n')[0]}`,
  );

  progress('bundling the watcher workflows and the baseline workflows');
  const baselineWorkflows = fileURLToPath(new URL('./baseline/workflows.ts', import.meta.url));
  const bundles = {
    watcher: await bundleTo(workflowsPath, path.join(dir, 'watcher-bundle.js')),
    baseline: await bundleTo(baselineWorkflows, path.join(dir, 'baseline-bundle.js')),
  };

  const partial: Omit<BenchResults, 'durationSec'> = {
    mode,
    ...(options.only.size < SCENARIOS.length ? { scenarios: SCENARIOS.filter((name) => options.only.has(name)) } : {}),
    startedAt,
    commit,
    ...(changedFiles.length > 0 ? { changedFiles } : {}),
    server: serverName,
    serverKind: config.temporal.address ? 'external' : options.server,
    machine,
    notes: [
      'The machine is shared with other work (tests of other sessions may run): absolute figures move, the ratios to raw Temporal on the same server in the same run are what to read.',
      'Scenarios 1–3 run the bridge, the worker, the raw baseline worker, the agent and the load generator in one Node process; scenario 4 runs worker, bridge and dev server as separate processes on a fresh server per side.',
      ...(ourCluster
        ? [
            '"Server" CPU is the sum of the cluster\'s four Temporal service processes; PostgreSQL\'s (postmaster and backends) is counted apart in scenario 1. Scenario 4 starts a fresh cluster per side and measures worker and bridge only (no single server process, no SQLite file).',
          ]
        : []),
    ],
  };

  // A scenario that fails is reported in the notes; the others still run and the results are still written.
  const failures: string[] = [];
  const attempt = async (scenario: Scenario, name: string, run: () => Promise<void>) => {
    if (!options.only.has(scenario)) return;
    try {
      await run();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      progress(`${name} FAILED: ${message}`);
      failures.push(`${name} failed: ${message.slice(0, 300)}`);
    }
  };
  const { only, concurrency } = options;

  if (['throughput', 'latency', 'lapse', 'cost'].some((name) => only.has(name as Scenario))) {
    const server = await startServer(config, path.join(dir, 'main'), 'scenarios 1–3', options.server);
    const stack = await startStack(server, bundles);
    partial.notes.push(
      `Scenarios 1–3 and 5: the watcher's worker and the raw worker share the benchmark's process (heap limit ${stack.workerBounds.heapLimitMiB} MiB) and each caches at most ${stack.workerBounds.maxCachedWorkflows} workflows.`,
    );
    try {
      // Without scenario 1 to measure it: about what a batch raise settles at on two cores (9–15/s in today's runs),
      // so that scenario 3's raises have settled before their due instant (50 left 1,000 raises 38 s late).
      let raisePerSec = 10;
      let rawPerSec = 200;
      await attempt('throughput', 'scenario 1 (raise throughput)', async () => {
        const { singles, batches, rawStarts } = size;
        partial.throughput = await runThroughput(stack, { concurrency, singles, batches, rawStarts });
        raisePerSec = partial.throughput.batch.settledPerSec;
        rawPerSec = partial.throughput.rawAcceptedPerSec;
      });
      await attempt('latency', 'scenario 2 (fact to satisfied)', async () => {
        partial.factLatency = await runFactLatency(stack, size.latencySamples, concurrency);
      });
      if (only.has('lapse')) partial.lapse = [];
      for (const count of size.lapses) {
        await attempt('lapse', `scenario 3 (lapse lateness, ${count})`, async () => {
          partial.lapse!.push(await runLapseLateness(stack, { count, concurrency, raisePerSec, rawPerSec }));
        });
      }
      // Last on this stack: its short-lived routers' timers would otherwise run during the lapse scenario.
      await attempt('cost', 'scenario 5 (cost per expectation)', async () => {
        partial.cost = await runCost(stack, size.costSamples);
      });
    } finally {
      await stack.close();
      await server.stop();
    }
  }

  if (only.has('traffic')) {
    // A server of its own: what other scenarios left on theirs (timers, backlogs) would be read as traffic.
    const server = await startServer(config, path.join(dir, 'traffic'), 'scenario 7', options.server);
    try {
      await attempt('traffic', 'scenario 7 (traffic)', async () => {
        const rig = await startTrafficRig(server, path.join(dir, 'traffic', 'rig'), bundles, TRAFFIC_AGENTS);
        try {
          const { rates, maxRate, ...bounds } = TRAFFIC[mode];
          partial.traffic = await runTraffic(rig, {
            rates: options.trafficRates ?? rates,
            maxRate: options.trafficMaxRate ?? maxRate,
            stepMs: size.trafficStepSec * 1000,
            ...bounds,
            maxAttempts: 4,
            attemptTimeoutMs: 30_000,
            feedOnly: options.trafficFeedOnly,
          });
        } finally {
          await rig.close();
        }
      });
    } finally {
      await server.stop();
    }
    partial.notes.push(
      "Scenario 7: the watcher's worker, its bridge and the raw worker each ran in a process of their own (both workers with compose's heap bound and the same workflow cache); the agents, the feed and the load in the benchmark's process. Per-principal quotas were off (as in scenario 4), so no 429 was expected.",
    );
  }

  await attempt('scale', 'scenario 4 (scale)', async () => {
    const { scaleState, scaleMinutes } = options;
    const resume = scaleState ? { dir: scaleState, budgetMs: (scaleMinutes ?? Infinity) * 60_000 } : undefined;
    const scaleOptions = { count: size.scale, concurrency, sides: options.scaleSides, server: options.server };
    partial.scale = await runScale(config, path.join(dir, 'scale'), {
      ...scaleOptions,
      burst: size.scaleBurst,
      resume,
      baselineBundle: bundles.baseline,
    });
    partial.notes.push(
      `Scenario 4's workers ran with NODE_OPTIONS=${DEPLOYED_WORKER_NODE_OPTIONS} (the heap bound of docker-compose.yml's worker).`,
    );
    if (partial.scale.paused.length > 0)
      partial.notes.push(
        `Scenario 4 paused with more to raise (${partial.scale.paused.join(', ')}): run again with the same --scale-state.`,
      );
    if (partial.scale.ours?.wentIdle === false || partial.scale.raw?.wentIdle === false)
      partial.notes.push('Scenario 4: a worker never went idle after raising; its figures were read anyway.');
  });

  partial.notes.push(...failures);
  partial.sdkWarnings = sdkWarnings();
  // Sizes, rates and the other options the run was given, as typed.
  if (process.argv.length > 2) partial.notes.push(`Options: \`${process.argv.slice(2).join(' ')}\`.`);
  const durationSec = Math.round((Date.now() - t0) / 1000);
  const results: BenchResults = { ...partial, durationSec };
  process.stdout.write(`\n${markdown(results)}\n`);
  if (options.write) {
    const written = writeResults(results);
    progress(`wrote ${written.json} and ${written.md}`);
  }
  if (failures.length > 0 || options.keep) {
    if (failures.length > 0) process.exitCode = 1;
    progress(`kept ${dir} for its logs (worker.log, bridge.log, temporal.log) and its servers' databases`);
  } else {
    rmSync(dir, { recursive: true, force: true });
  }
  progress(`done in ${Math.floor(durationSec / 60)} min ${durationSec % 60} s`);
}

/** `git rev-parse --short HEAD`, `+dirty` with changes other than bench/results/ (and those paths); or `unknown`. */
function commitOf(): { commit: string; changedFiles: string[] } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' });
  try {
    const head = git('rev-parse', '--short', 'HEAD').trim();
    const changedFiles = git('status', '--porcelain')
      .split('\n')
      .map((line) => line.slice(3).trim())
      .filter((file) => file !== '' && file !== 'node_modules' && !file.startsWith('bench/results/'));
    return { commit: changedFiles.length > 0 ? `${head}+dirty` : head, changedFiles: changedFiles.slice(0, 50) };
  } catch {
    return { commit: 'unknown', changedFiles: [] };
  }
}

/** The cluster's releases, for the report's Machine line. */
function clusterVersions(): string {
  const binaries = ensureClusterBinaries({ log: (line) => progress(line) });
  const postgres = path.join(binaries.postgresBinDir.path, 'postgres');
  let version = 'PostgreSQL';
  try {
    version = execFileSync(postgres, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    // The version is for the report only.
  }
  return `Temporal server ${TEMPORAL_SERVER_VERSION} (${binaries.server.origin}), ${version}`;
}

stopOnSignals();
main().then(
  // Whatever handle a library left open, the run is over.
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
