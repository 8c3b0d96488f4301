/**
 * The local cluster (`npm run cluster`, dev/cluster) killed with `kill -9`: none of its processes (PostgreSQL and its
 * backends, the four Temporal services, the UI) outlives it, though each runs in a process group of its own; and the
 * next start on the same data directory comes up with what the first recorded (a stale lock file handled). A port it
 * is given that something else holds stops it before it starts anything.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, expect, it } from 'vitest';
import { freePort, freePortPair } from '../support/net.js';
import { spawnEntry, type Spawned } from '../support/processes.js';

// As root, PostgreSQL runs as the `postgres` user: the directory must be searchable by it (mkdtemp makes it 0700).
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'watcher-cluster-crash-'));
chmodSync(dataDir, 0o755);
const running: Spawned[] = [];
let leftovers: number[] = [];

afterAll(async () => {
  await Promise.all(running.map((spawned) => spawned.stop('SIGKILL')));
  // A failed assertion must not leave the cluster behind for the rest of the run.
  for (const pid of leftovers.filter(alive)) process.kill(pid, 'SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** Every process below `root` (children, their children, ...), from /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      // pid (comm) state ppid ...: the command may hold spaces and parentheses, the fields after its last ')' do not.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone while we read.
    }
  }
  const found: number[] = [];
  for (let next = [root]; next.length > 0;) {
    next = next.flatMap((pid) => children.get(pid) ?? []);
    found.push(...next);
  }
  return found;
}

/** True while `pid` runs (a zombie nobody has reaped yet has ended). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The command name of each process, for a failure message. */
const named = (pids: number[]) => pids.map((pid) => `${pid} ${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}`);

it('leaves no process running when its main process is killed with kill -9, and starts again on the same data', async () => {
  const temporalPort = await freePortPair();
  const env = {
    WATCHER_DATA_DIR: dataDir,
    PORT: String(await freePort()),
    WATCHER_EMBEDDED_TEMPORAL_PORT: String(temporalPort),
    WATCHER_WORKER_METRICS_PORT: '0',
  };
  const workflowId = `crash-probe-${Date.now()}`;
  const first = spawnEntry('dev/cluster/main.ts', env);
  running.push(first);
  await first.waitFor(/Ctrl-C stops everything/, 300_000);
  const connection = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
  try {
    // On a queue nobody polls: it stays open, for the second start to find.
    await new Client({ connection }).workflow.start('probe', { taskQueue: 'nobody-polls-this', workflowId });
  } finally {
    await connection.close();
  }
  const children = descendants(first.child.pid!);
  leftovers = children;
  const names = named(children).join(', ');

  process.kill(first.child.pid!, 'SIGKILL');
  await first.exited;

  // The summary's lines `    temporal history    pid 1234  log ...`: the four services, each in a group of its own.
  const services = [...first.output().matchAll(/^ {4}temporal \w+ +pid (\d+)/gm)].map((match) => Number(match[1]));
  expect(services).toHaveLength(4);
  expect(children).toEqual(expect.arrayContaining(services));
  expect(names).toMatch(/\d+ postgres/);
  await expect.poll(() => named(children.filter(alive)), { timeout: 15_000, interval: 250 }).toEqual([]);

  const second = spawnEntry('dev/cluster/main.ts', env);
  running.push(second);
  await second.waitFor(/Ctrl-C stops everything/, 300_000);
  leftovers = descendants(second.child.pid!);
  const again = await Connection.connect({ address: `127.0.0.1:${temporalPort}` });
  try {
    const description = await new Client({ connection: again }).workflow.getHandle(workflowId).describe();
    expect(description.status.name).toBe('RUNNING');
  } finally {
    await again.close();
  }
  expect(second.output()).not.toContain('admin token:');
  expect(await second.stop('SIGTERM', 120_000)).toBe(0);
  expect(leftovers.filter(alive)).toEqual([]);
}, 600_000);

it('refuses to start when something else holds its frontend port, naming the port', async () => {
  const holder = net.createServer();
  const port = await freePortPair();
  await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
  try {
    const cluster = spawnEntry('dev/cluster/main.ts', {
      WATCHER_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      WATCHER_EMBEDDED_TEMPORAL_PORT: String(port),
      WATCHER_WORKER_METRICS_PORT: '0',
    });
    running.push(cluster);

    expect(await cluster.exited).toBe(1);
    expect(cluster.output()).toContain(
      `port ${port} (frontend) is in use: something else listens on 127.0.0.1:${port}`,
    );
    expect(cluster.output()).not.toContain('PostgreSQL on');
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
}, 120_000);
