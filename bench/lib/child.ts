/**
 * Entry points run as processes of their own (scenarios 4 and 7), so that each one's memory and CPU can be read
 * apart: test/support/processes.ts's `node --import tsx <script>`, with this process's environment under `env`, its
 * output appended to `logFile`, and killed if the benchmark is interrupted.
 */
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnCommand } from '../../test/support/processes.js';
import { onInterrupt } from './cleanup.js';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface Child {
  pid: number;
  /** Resolves once the output matches `pattern`; rejects if the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<unknown>;
  output(): string;
  stop(): Promise<void>;
}

/** What a caller stops when it is done: a child, or anything it started beside one. */
export type Stoppable = Pick<Child, 'stop'>;

/** Runs a TypeScript entry point of the repository with `args`, and `env` on top of this process's environment. */
export function spawnEntry(script: string, args: string[], env: Record<string, string>, logFile: string): Child {
  const inherited = Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const spawned = spawnCommand([process.execPath, '--import', 'tsx', path.join(repoRoot, script), ...args], {
    ...Object.fromEntries(inherited),
    ...env,
  });
  const log = createWriteStream(logFile, { flags: 'a' });
  spawned.child.stdout!.on('data', (chunk: Buffer) => log.write(chunk));
  spawned.child.stderr!.on('data', (chunk: Buffer) => log.write(chunk));
  const unregister = onInterrupt(() => spawned.stop('SIGKILL'));
  return {
    pid: spawned.child.pid!,
    waitFor: (pattern, timeoutMs = 180_000) => spawned.waitFor(pattern, timeoutMs),
    output: spawned.output,
    async stop() {
      await spawned.stop();
      unregister();
      log.end();
    },
  };
}
