/**
 * `npx tsx bench/failover.ts [--duration=180] [--raise-every=2000] [--feed-every=375] [--feed-size=5] [--burst=4]`:
 * two of everything, one killed (issue 47), the full version of test/cluster/failover.test.ts: two bridges and two
 * workers on a cluster the bench starts (or TEMPORAL_ADDRESS's), under test/support/failover.ts's traffic for
 * `--duration` seconds; one bridge SIGKILLed at a fifth of it and started again, one worker at a half. Judged as the
 * test judges, and how long the survivors took to catch up after each kill. Writes bench/results/<time>-failover.json.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { workflowsPath } from '../src/temporal/workflows-path.js';
import { startTestAgent } from '../test/support/agent.js';
import { unique } from '../test/support/ids.js';
import {
  runFailover,
  startFleet,
  type Fleet,
  type SentRequest,
  type Verdict,
  writeFleetPrincipals,
} from '../test/support/failover.js';
import { backlogOf } from './lib/backlog.js';
import { repoRoot } from './lib/child.js';
import { stopOnSignals } from './lib/cleanup.js';
import { delay, progress } from './lib/progress.js';
import { bundleTo, connect, startServer } from './lib/server.js';
import { summarise } from './lib/stats.js';

const option = (name: string, fallback: number) =>
  Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const durationMs = option('duration', 180) * 1000;
const traffic = {
  durationMs,
  raiseEveryMs: option('raise-every', 2_000),
  feedEveryMs: option('feed-every', 375),
  feedSize: option('feed-size', 5),
  feedBurst: option('burst', 4),
};

type Backlog = Array<[at: number, tasks: number]>;

/** What a kill may touch: until 30 s (a lapse delivery's attempt) after the process runs again. */
const windowEnd = (kill: { at: number; restartMs: number }) => kill.at + kill.restartMs + 30_000;

const answerMsOf = (s: SentRequest) => s.exchange.answeredAt! - s.exchange.sentAt;
const latenessMsOf = (l: Verdict['lapses'][number]) => l.receivedAt - l.deadlineMs;
const maxOf = (values: number[]) => Math.max(0, ...values);

/** Before the first kill: the slowest answer, the latest lapse, the largest backlog. */
function baselineOf(sent: SentRequest[], verdict: Verdict, backlog: Backlog, firstKill: number) {
  return {
    answerMaxMs: maxOf(sent.filter((s) => s.exchange.sentAt < firstKill).map(answerMsOf)),
    lapseLatenessMaxMs: maxOf(verdict.lapses.filter((l) => l.deadlineMs < firstKill).map(latenessMsOf)),
    backlogMax: maxOf(backlog.filter(([at]) => at < firstKill).map(([, tasks]) => tasks)),
  };
}

/**
 * How long the survivors took to catch up after the kill at `at`, until `until`: the latest of the requests it caught in
 * flight answered, the last one sent since answered slower than any before the kills, and (a worker's kill) the last
 * lapse due from 10 s before it delivered later than any before the kills.
 */
function catchUp(
  run: { sent: SentRequest[]; verdict: Verdict; backlog: Backlog },
  kill: { at: number; restartMs: number },
  until: number,
  baseline: ReturnType<typeof baselineOf>,
  withLapses: boolean,
) {
  const { at } = kill;
  const caught = run.sent.filter((s) => s.exchange.sentAt <= at && !(s.exchange.answeredAt! <= at));
  const since = run.sent.filter((s) => s.exchange.sentAt > at && s.exchange.sentAt < until);
  const slow = since.filter((s) => answerMsOf(s) > baseline.answerMaxMs);
  const lapses = withLapses ? run.verdict.lapses.filter((l) => l.deadlineMs > at - 10_000 && l.deadlineMs < until) : [];
  const late = lapses.filter((l) => latenessMsOf(l) > baseline.lapseLatenessMaxMs);
  const figures = {
    restartMs: kill.restartMs,
    inFlight: caught.length,
    inFlightAnsweredAfterMs: maxOf(caught.map((s) => s.exchange.answeredAt! - at)),
    slowerAnswers: slow.length,
    lastSlowerAnsweredAfterMs: maxOf(slow.map((s) => s.exchange.answeredAt! - at)),
    answerMaxMs: maxOf(since.map(answerMsOf)),
    lapsesDue: lapses.length,
    laterLapses: late.length,
    lastLaterLapseAfterMs: maxOf(late.map((l) => l.receivedAt - at)),
    lapseLatenessMaxMs: maxOf(lapses.map(latenessMsOf)),
    lapses: lapses.map((l) => ({ dueAfterMs: l.deadlineMs - at, receivedAfterMs: l.receivedAt - at })),
    backlogMax: maxOf(run.backlog.filter(([t]) => t >= at && t < until).map(([, tasks]) => tasks)),
  };
  const caughtUpAfterMs = Math.max(
    figures.inFlightAnsweredAfterMs,
    figures.lastSlowerAnsweredAfterMs,
    figures.lastLaterLapseAfterMs,
  );
  return { caughtUpAfterMs, ...figures };
}

async function main(): Promise<void> {
  stopOnSignals();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-bench-failover-'));
  // As root, PostgreSQL runs as the `postgres` user: the directory must be searchable by it.
  chmodSync(dir, 0o755);
  const server = await startServer(loadConfig(), path.join(dir, 'server'), 'failover', 'cluster');
  const client = await connect(server);
  const agent = await startTestAgent();
  let fleet: Fleet | undefined;
  const prefix = unique('failover');
  const taskQueue = `${prefix}-queue`;
  const { tokens, principalsFile } = writeFleetPrincipals(agent.cardUrl);
  try {
    const workflowBundle = await bundleTo(workflowsPath, path.join(dir, 'workflow-bundle.js'));
    const { address } = server;
    const running = await startFleet({ address, taskQueue, principalsFile, dataDir: dir, workflowBundle });
    fleet = running;
    progress(`failover: two bridges, two workers on ${taskQueue}; ${durationMs / 1000} s of traffic`);
    const backlog: Array<[number, number]> = [];
    let sampling = true;
    const sampler = (async () => {
      for (; sampling; await delay(1_000))
        backlog.push([Date.now(), (await backlogOf(client, server.namespace, taskQueue).catch(() => 0)) ?? 0]);
    })();
    const { sent, killed, trafficEnd, verdict } = await runFailover(running, agent, tokens, {
      prefix,
      ...traffic,
      killBridgeAtMs: durationMs / 5,
      killWorkerAtMs: durationMs / 2,
      giveUpMs: 600_000,
      judgeWaitMs: 600_000,
      log: (line) => progress(`failover: ${line}`),
    });
    const judgedAt = Date.now();
    sampling = false;
    await sampler;
    const run = { sent, verdict, backlog };
    const baseline = baselineOf(sent, verdict, backlog, killed.bridge.at);
    const { notApplied, wrongState, lost, doubled, backlog: lapsesOfTheBacklog } = verdict;
    const emptyAt = backlog.find(([at, tasks]) => at >= trafficEnd && tasks === 0)?.[0];
    const result = {
      date: new Date().toISOString(),
      commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim(),
      command: `npx tsx bench/failover.ts ${process.argv.slice(2).join(' ')}`.trim(),
      loadAverage: os.loadavg()[0],
      traffic,
      counts: verdict.counts,
      failures: { notApplied, wrongState, lost, doubled, backlog: lapsesOfTheBacklog },
      requestsThatMetTheDeadBridge: sent.filter((s) => s.exchange.retries.some((r) => r.startsWith('fetch failed')))
        .length,
      answerMs: summarise(sent.filter((s) => s.exchange.answeredAt).map(answerMsOf), 0),
      lapseLatenessMs: summarise(verdict.lapses.map(latenessMsOf), 0),
      baseline,
      bridgeKill: catchUp(run, killed.bridge, Math.min(windowEnd(killed.bridge), killed.worker.at), baseline, false),
      workerKill: catchUp(run, killed.worker, Math.min(windowEnd(killed.worker), trafficEnd), baseline, true),
      backlogEmptyAfterTrafficMs: emptyAt === undefined ? undefined : emptyAt - trafficEnd,
      lastLapseAfterTrafficMs: Math.max(0, ...verdict.lapses.map((l) => l.receivedAt - trafficEnd)),
      judgedAfterTrafficMs: judgedAt - trafficEnd,
    };
    const stamp = result.date.replace(/:/g, '-').replace(/\.\d+Z$/, 'Z');
    const file = path.join(repoRoot, 'bench', 'results', `${stamp}-failover.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    progress(`failover: written to ${path.relative(repoRoot, file)}`);
    if (Object.values(result.failures).some((list) => list.length > 0)) process.exitCode = 1;
  } finally {
    await fleet?.stop();
    await agent.close();
    await client.connection.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(path.dirname(principalsFile), { recursive: true, force: true });
  }
}

await main();
