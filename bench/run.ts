/**
 * `npm run bench`: the watcher side by side with raw Temporal on the same server in the same run (the embedded dev
 * server unless `--server cluster` or TEMPORAL_ADDRESS). Its options are BENCHMARKS.md's "How to run", said there once.
 * Every result names the commit it measured (`git rev-parse --short HEAD`, `+dirty` with uncommitted changes).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { ensureClusterBinaries, TEMPORAL_SERVER_VERSION } from '../dev/temporal/provision-cluster.js';
import { workflowsPath } from '../src/temporal/workflows-path.js';
import { baselineWorkflowsPath } from './baseline/paths.js';
import { repoRoot } from './lib/child.js';
import { stopOnSignals } from './lib/cleanup.js';
import { describeMachine } from './lib/proc.js';
import { progress } from './lib/progress.js';
import { countAgentConsoleWarnings, installSdkLog, sdkWarnings } from './lib/sdk-log.js';
import { markdown, writeResults, type BenchResults } from './lib/report.js';
import { bundleTo, describeServer, startServer, temporalCliPath, type ServerKind } from './lib/server.js';
import { startStack } from './lib/stack.js';
import { runCost } from './scenarios/cost.js';
import { runFactLatency } from './scenarios/fact-latency.js';
import { runLapseLateness } from './scenarios/lapse-lateness.js';
import { runScale } from './scenarios/scale.js';
import { runThroughput } from './scenarios/throughput.js';
import { startTrafficRig } from './lib/traffic-rig.js';
import { DEPLOYED_WORKER_NODE_OPTIONS } from './lib/watcher-processes.js';
import { runTraffic } from './scenarios/traffic.js';

const SCENARIOS = ['throughput', 'latency', 'lapse', 'scale', 'cost', 'traffic'] as const;
type Scenario = (typeof SCENARIOS)[number];

interface Options {
  quick: boolean;
  /** `--server cluster`: a Temporal cluster on PostgreSQL started by the bench; default the embedded dev server. */
  server: ServerKind;
  only: Set<Scenario>;
  concurrency: number;
  write: boolean;
  /** `--scale-sides=ours`: run only one side of scenario 4. */
  scaleSides: Set<'ours' | 'raw'>;
  /** `--set=singles=100,scale=2000`: sizes of the mode overridden. */
  sizes: Partial<Record<SizeKey, number>>;
  /** `--traffic-rates=4,8,16`: scenario 7's offered raises a second, one step each (default: the mode's). */
  trafficRates?: number[];
  /** `--traffic-max-rate=64`: scenario 7 doubles past its rates for a side that has not missed, up to this. */
  trafficMaxRate?: number;
  /** `--traffic-feed-only`: scenario 7 offers facts only (its rates count raises it would have had: ten facts each). */
  trafficFeedOnly: boolean;
}

function parseArgs(argv: string[]): Options {
  const options: Options = {
    quick: false,
    server: 'dev',
    only: new Set(SCENARIOS),
    concurrency: 16,
    write: true,
    sizes: {},
    scaleSides: new Set(['ours', 'raw']),
    trafficFeedOnly: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const at = arg.indexOf('=');
    const [key, value] = at === -1 ? [arg, undefined] : [arg.slice(0, at), arg.slice(at + 1)];
    if (key === '--quick') options.quick = true;
    else if (key === '--server') {
      // `--server cluster` and `--server=cluster`.
      const kind = value ?? argv[++i];
      if (kind !== 'dev' && kind !== 'cluster')
        throw new Error(`--server: dev (the default) or cluster, not '${kind ?? ''}'`);
      options.server = kind;
    } else if (key === '--no-write') options.write = false;
    else if (key === '--traffic-feed-only') options.trafficFeedOnly = true;
    else if (key === '--traffic-max-rate' && Number(value) > 0) options.trafficMaxRate = Number(value);
    else if (key === '--only' && value) {
      const names = value.split(',').map((s) => s.trim());
      for (const name of names)
        if (!SCENARIOS.includes(name as Scenario))
          throw new Error(`--only: unknown scenario '${name}' (${SCENARIOS.join(', ')})`);
      options.only = new Set(names as Scenario[]);
    } else if (key === '--concurrency' && value && Number(value) > 0) options.concurrency = Number(value);
    else if (key === '--scale-sides' && value) {
      const sides = value.split(',');
      if (!sides.every((side) => side === 'ours' || side === 'raw'))
        throw new Error(`--scale-sides: ours and/or raw, not '${value}'`);
      options.scaleSides = new Set(sides as Array<'ours' | 'raw'>);
    } else if (key === '--traffic-rates' && value) {
      const rates = value.split(',').map(Number);
      if (!rates.every((rate) => rate > 0))
        throw new Error(`--traffic-rates: raises a second separated by commas, not '${value}'`);
      options.trafficRates = rates;
    } else if (key === '--set' && value) {
      for (const pair of value.split(',')) {
        const [name, number] = pair.split('=') as [SizeKey, string | undefined];
        if (!SIZE_KEYS.includes(name) || !(Number(number) > 0)) throw new Error(`--set: bad size '${pair}'`);
        options.sizes[name] = Number(number);
      }
    } else throw new Error(`unknown option ${arg}; see BENCHMARKS.md, "How to run"`);
  }
  return options;
}

/** How much of each scenario a quick and a full run do. */
const SIZES = {
  quick: {
    singles: 400,
    batches: 60,
    rawStarts: 600,
    latencySamples: 100,
    lapses: [200],
    scale: 10_000,
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
    costSamples: 10,
    trafficStepSec: 90,
  },
};
type SizeKey = Exclude<keyof (typeof SIZES)['quick'], 'lapses'> | 'lapse';
/** What `--set` may override: each size, and `lapse` for the one count of scenario 3. */
const SIZE_KEYS = [...Object.keys(SIZES.quick).filter((key) => key !== 'lapses'), 'lapse'] as SizeKey[];

/**
 * Scenario 7's ramp and its bounds: a step's tail (answers still outstanding after its schedule), the wait for the
 * queues to drain, the wait at the end for the lapses still due, and the histories read per step and side.
 */
const TRAFFIC = {
  // The watcher's knee lay between 2 and 4 raises/s on the dev server on two cores (2026-12-03): the quick ramp brackets it.
  // Past its rates, the ramp doubles for a side that has not missed yet, up to maxRate: so that raw's knee is found too.
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

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
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
  // As root, the cluster's PostgreSQL runs as the `postgres` user: the directory must be searchable by it.
  if (options.server === 'cluster') chmodSync(dir, 0o755);
  const serverName = describeServer(options.server, config.temporal.address);
  progress(`${mode} run of ${[...options.only].join(', ')} at ${commit} on the ${serverName}; work directory ${dir}`);
  const machine = describeMachine(
    config.temporal.address || options.server === 'cluster' ? undefined : temporalCliPath(),
  );
  if (options.server === 'cluster' && !config.temporal.address) machine.temporal = clusterVersions();
  progress(
    `machine: ${machine.cpus} cores, ${machine.memoryGiB} GiB, node ${machine.node}, ${machine.temporal.split('\n')[0]}`,
  );

  progress('bundling the watcher workflows and the baseline workflows');
  const bundles = {
    watcher: await bundleTo(workflowsPath, path.join(dir, 'watcher-bundle.js')),
    baseline: await bundleTo(baselineWorkflowsPath, path.join(dir, 'baseline-bundle.js')),
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
      ...(options.server === 'cluster' && !config.temporal.address
        ? [
            '"Server" CPU is the sum of the cluster\'s four Temporal service processes; PostgreSQL\'s (postmaster and backends) is counted apart in scenario 1. Scenario 4 starts a fresh cluster per side and measures worker and bridge only (no single server process, no SQLite file).',
          ]
        : []),
    ],
  };

  // A scenario that fails is reported in the notes; the others still run and the results are still written.
  const failures: string[] = [];
  const attempt = async (name: string, run: () => Promise<void>) => {
    try {
      await run();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      progress(`${name} FAILED: ${message}`);
      failures.push(`${name} failed: ${message.slice(0, 300)}`);
    }
  };

  if (['throughput', 'latency', 'lapse', 'cost'].some((name) => options.only.has(name as Scenario))) {
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
      if (options.only.has('throughput')) {
        await attempt('scenario 1 (raise throughput)', async () => {
          const throughput = await runThroughput(stack, {
            concurrency: options.concurrency,
            singles: size.singles,
            batches: size.batches,
            rawStarts: size.rawStarts,
          });
          partial.throughput = throughput;
          raisePerSec = throughput.batch.settledPerSec;
          rawPerSec = throughput.rawAcceptedPerSec;
        });
      }
      if (options.only.has('latency')) {
        await attempt('scenario 2 (fact to satisfied)', async () => {
          partial.factLatency = await runFactLatency(stack, size.latencySamples, options.concurrency);
        });
      }
      if (options.only.has('lapse')) {
        partial.lapse = [];
        for (const count of size.lapses) {
          await attempt(`scenario 3 (lapse lateness, ${count})`, async () => {
            const lapse = await runLapseLateness(stack, {
              count,
              concurrency: options.concurrency,
              raisePerSec,
              rawPerSec,
            });
            partial.lapse!.push(lapse);
          });
        }
      }
      // Last on this stack: its short-lived routers' timers would otherwise run during the lapse scenario.
      if (options.only.has('cost')) {
        await attempt('scenario 5 (cost per expectation)', async () => {
          partial.cost = await runCost(stack, size.costSamples);
        });
      }
    } finally {
      await stack.close();
      await server.stop();
    }
  }

  if (options.only.has('traffic')) {
    // A server of its own: what other scenarios left on theirs (timers, backlogs) would be read as traffic.
    const server = await startServer(config, path.join(dir, 'traffic'), 'scenario 7', options.server);
    try {
      await attempt('scenario 7 (traffic)', async () => {
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

  if (options.only.has('scale')) {
    await attempt('scenario 4 (scale)', async () => {
      partial.scale = await runScale(config, path.join(dir, 'scale'), {
        count: size.scale,
        concurrency: options.concurrency,
        baselineBundle: bundles.baseline,
        sides: options.scaleSides,
        server: options.server,
      });
    });
    partial.notes.push(
      `Scenario 4's workers ran with NODE_OPTIONS=${DEPLOYED_WORKER_NODE_OPTIONS} (the heap bound of docker-compose.yml's worker).`,
    );
    if (partial.scale?.ours?.wentIdle === false || partial.scale?.raw?.wentIdle === false) {
      partial.notes.push('Scenario 4: a worker never went idle after raising; its figures were read anyway.');
    }
  }

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
  if (failures.length > 0) {
    process.exitCode = 1;
    progress(`kept ${dir} for its logs (worker.log, bridge.log, temporal.log)`);
  } else {
    rmSync(dir, { recursive: true, force: true });
  }
  progress(`done in ${Math.floor(durationSec / 60)} min ${durationSec % 60} s`);
}

/**
 * The commit the run measures: `git rev-parse --short HEAD`, with `+dirty` when the working tree has changes other than
 * results (bench/results/), and those changed paths. `unknown` outside a git checkout.
 */
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
  let postgres = 'PostgreSQL';
  try {
    postgres = execFileSync(path.join(binaries.postgresBinDir.path, 'postgres'), ['--version'], {
      encoding: 'utf8',
    }).trim();
  } catch {
    // The version is for the report only.
  }
  return `Temporal server ${TEMPORAL_SERVER_VERSION} (${binaries.server.origin}), ${postgres}`;
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
