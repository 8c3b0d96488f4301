/**
 * A neighbour for the lifecycle tests: other work on the same machine and the same Temporal server while they run,
 * as users run the watcher, whose guarantees must hold so. It keeps one core busy for half of every 100 ms
 * in a worker thread, and starts workflows of its own on a task queue no worker polls, each a write the server
 * serves beside ours. It asserts nothing: the test beside it does.
 */
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { Client } from '@temporalio/client';

export interface NeighbourOptions {
  /** The share of each 100 ms the thread spins (default 0.5). */
  cpuShare?: number;
  /** Workflow starts a second on the neighbour's own task queue (default 5). */
  startsPerSecond?: number;
}

export interface Neighbour {
  /** Starts the neighbour made, and those that failed (a busy server may refuse some: that is its business). */
  readonly starts: { made: number; failed: number };
  stop(): Promise<void>;
}

const SPIN = `
const { parentPort, workerData } = require('node:worker_threads');
let running = true;
parentPort.on('message', () => { running = false; });
const tick = () => {
  if (!running) return process.exit(0);
  const until = Date.now() + workerData.busyMs;
  while (Date.now() < until) Math.sqrt(Math.random());
  setTimeout(tick, 100 - workerData.busyMs);
};
tick();
`;

export function startNeighbour(client: Client, options: NeighbourOptions = {}): Neighbour {
  const busyMs = Math.round(100 * Math.min(Math.max(options.cpuShare ?? 0.5, 0), 0.95));
  const spinner = new Worker(SPIN, { eval: true, workerData: { busyMs } });
  const taskQueue = `neighbour-${randomUUID()}`;
  const starts = { made: 0, failed: 0 };
  const everyMs = 1000 / (options.startsPerSecond ?? 5);
  const timer = setInterval(() => {
    client.workflow.start('neighbourWorkflow', { taskQueue, workflowId: `neighbour-${randomUUID()}` }).then(
      () => starts.made++,
      () => starts.failed++,
    );
  }, everyMs);
  return {
    starts,
    async stop() {
      clearInterval(timer);
      spinner.postMessage('stop');
      await new Promise((resolve) => spinner.once('exit', resolve));
    },
  };
}
