/**
 * A child process of the cluster: its output appended to a log file, started again on request (the fault tests
 * kill and restart services), stopped with SIGTERM and, after a grace period, SIGKILL. It never outlives this process,
 * however this one ends (a `kill -9` included): on Linux it runs under `setpriv --pdeathsig`, so the kernel signals it
 * when we are gone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { waitForPort } from '../temporal/provision.js';
import { ensurePortFree } from './ports.js';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  logFile: string;
  /**
   * The port that says it is up: `start()` refuses to run it while something else holds the port (a PortInUseError),
   * and resolves once it listens on it.
   */
  port?: number;
  startTimeoutMs?: number;
  /** The signal the kernel sends it once this process is gone (default SIGKILL). */
  deathSignal?: NodeJS.Signals;
  /** The OS user to run it as (PostgreSQL refuses to run as root). */
  user?: { uid: number; gid: number };
}

/** One process of the cluster. `start()` after `stop()` (or a kill) runs it again with the same spec. */
export interface ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  /** Undefined while it is not running. */
  readonly pid: number | undefined;
  start(): Promise<void>;
  /** SIGTERM (or `signal`), SIGKILL after `graceMs`; resolves once it has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

/** The last lines of a log, for an error message. */
export function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

export class ProcessError extends Error {
  override name = 'ProcessError';
}

/**
 * How a child is started so that it ends with us: `setpriv --pdeathsig <signal> --` before its command (util-linux,
 * on Linux; the setting survives the exec, and the uid change happens before it). Elsewhere, no parent-death signal
 * exists: the child is started as it is, and only an orderly exit of ours stops it.
 */
function deathWatched(
  command: string,
  args: string[],
  signal: NodeJS.Signals,
  env: NodeJS.ProcessEnv,
): [string, string[]] {
  if (process.platform !== 'linux') return [command, args];
  const setpriv = (env.PATH ?? '')
    .split(path.delimiter)
    .map((dir) => path.join(dir, 'setpriv'))
    .find((file) => existsSync(file));
  if (!setpriv) {
    throw new ProcessError(
      'setpriv (util-linux) is not on PATH: the cluster needs it so that its processes end with it (apt-get install util-linux)',
    );
  }
  return [setpriv, ['--pdeathsig', signal.replace(/^SIG/, ''), '--', command, ...args]];
}

/** Children still running when this process exits (an error, process.exit) are killed rather than left behind. */
const orphans = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of orphans) child.kill('SIGKILL');
});

export function managedProcess(spec: ProcessSpec): ManagedProcess {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;
  return {
    name: spec.name,
    logFile: spec.logFile,
    get pid() {
      return running() ? child?.pid : undefined;
    },
    async start() {
      if (running()) return;
      if (spec.port !== undefined) await ensurePortFree(spec.port, spec.name);
      const [command, args] = deathWatched(
        spec.command,
        spec.args,
        spec.deathSignal ?? 'SIGKILL',
        spec.env ?? process.env,
      );
      mkdirSync(path.dirname(spec.logFile), { recursive: true });
      const output = openSync(spec.logFile, 'a');
      // Its own process group: a Ctrl-C in the terminal reaches only us, and we stop the cluster in order.
      const started = spawn(command, args, {
        cwd: spec.cwd,
        env: spec.env,
        stdio: ['ignore', output, output],
        detached: true,
        ...(spec.user ? { uid: spec.user.uid, gid: spec.user.gid } : {}),
      });
      closeSync(output);
      child = started;
      orphans.add(started);
      started.once('exit', () => orphans.delete(started));
      exited = new Promise((resolve) => started.once('exit', () => resolve()));
      const spawnError = new Promise<Error>((resolve) => started.once('error', resolve));
      if (spec.port === undefined) return;
      const up = await Promise.race([
        waitForPort(spec.port, spec.startTimeoutMs ?? 120_000),
        exited.then(() => false),
        spawnError.then(() => false),
      ]);
      if (!up) {
        started.kill('SIGKILL');
        throw new Error(
          `${spec.name} (${spec.command}) did not listen on port ${spec.port}` +
            (started.exitCode !== null ? ` (exited with ${started.exitCode})` : '') +
            `; its log, ${spec.logFile}, ends:\n${logTail(spec.logFile)}`,
        );
      }
    },
    async stop(signal = 'SIGTERM', graceMs = 20_000) {
      if (!running() || !child) return;
      const target = child;
      target.kill(signal);
      const timer = setTimeout(() => target.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a command to its end with its output appended to a log file; rejects with the log's tail when it fails. */
export async function runToEnd(
  spec: Omit<ProcessSpec, 'port' | 'startTimeoutMs' | 'user'> & { timeoutMs?: number },
): Promise<void> {
  const [command, args] = deathWatched(spec.command, spec.args, spec.deathSignal ?? 'SIGKILL', spec.env ?? process.env);
  mkdirSync(path.dirname(spec.logFile), { recursive: true });
  const output = openSync(spec.logFile, 'a');
  const child = spawn(command, args, { cwd: spec.cwd, env: spec.env, stdio: ['ignore', output, output] });
  closeSync(output);
  const timer = setTimeout(() => child.kill('SIGKILL'), spec.timeoutMs ?? 300_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (status) => resolve(status));
  }).finally(() => clearTimeout(timer));
  if (code !== 0) {
    throw new Error(`${spec.name} failed (exit ${code}); its log, ${spec.logFile}, ends:\n${logTail(spec.logFile)}`);
  }
}
