/**
 * Entry points run as separate processes (scenario 4), so that each one's memory and CPU can be read apart:
 * `node --import tsx <script>` is one process (the tsx wrapper would add a parent).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onInterrupt } from './cleanup.js';

/** The repository root. */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface Child {
  pid: number;
  /** Resolves once the output matches `pattern`; rejects if the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** The last 20,000 characters of its stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

/** Runs a TypeScript entry point of the repository with `env` on top of this process's environment. */
export function spawnEntry(
  script: string,
  args: string[],
  env: Record<string, string>,
  logFile: string,
  nodeArgs: string[] = [],
): Child {
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', path.join(repoRoot, script), ...args],
    {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const log = createWriteStream(logFile, { flags: 'a' });
  let tail = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    log.write(chunk);
    tail = (tail + chunk.toString()).slice(-20_000);
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.pid === undefined) throw new Error(`could not spawn ${script}`);
  const unregister = onInterrupt(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  return {
    pid: child.pid,
    waitFor(pattern, timeoutMs = 180_000) {
      return new Promise((resolve, reject) => {
        const done = (error?: Error) => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
          if (error) reject(error);
          else resolve();
        };
        const check = () => pattern.test(tail) && done();
        const onExit = () =>
          done(
            new Error(`${script} exited (${child.exitCode}) before ${pattern}; see ${logFile}:\n${tail.slice(-2000)}`),
          );
        const timer = setTimeout(
          () => done(new Error(`${script}: no ${pattern} within ${timeoutMs} ms; see ${logFile}`)),
          timeoutMs,
        );
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    output: () => tail,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      unregister();
      log.end();
    },
  };
}
