/**
 * Child processes for end-to-end tests: spawn an entry point, read its output, wait for a line, stop it.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface Spawned {
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code once the process has ended by itself. */
  exited: Promise<number | null>;
  /** Sends the signal (SIGKILL: to the whole process group) and resolves with the exit code (null when killed). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

/**
 * Runs `node --import ./src/early-signals.mjs --import tsx <script>`, as the npm scripts do, with the given
 * environment, on top of PATH and HOME only, so the test controls every setting; and of the Temporal config file none
 * (an empty one), so a profile in this machine's ~/.config/temporalio is not read. One process: a signal reaches the
 * script itself, not a launcher relaying it.
 */
export function spawnEntry(script: string, env: Record<string, string>): Spawned {
  return spawnCommand([process.execPath, '--import', './src/early-signals.mjs', '--import', 'tsx', script], env);
}

/** Runs a command (`[file, ...args]`) as `spawnEntry` runs a script, e.g. `['node', '--import', 'tsx', script]`. */
export function spawnCommand([command, ...args]: [string, ...string[]], env: Record<string, string>): Spawned {
  // Its own process group, so that SIGKILL reaches anything it started (a dev server, a launcher's child) too.
  const child = spawn(command, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TEMPORAL_CONFIG_FILE: '/dev/null', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // The group is gone already.
    }
  };
  let text = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    text += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    output: () => text,
    waitFor(pattern, timeoutMs = 90_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = text.match(pattern);
          if (match) {
            cleanup();
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output so far:\n${text}`));
        }, timeoutMs);
        const onExit = () => {
          cleanup();
          reject(new Error(`process exited (${child.exitCode}) before ${pattern}; output:\n${text}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
    async stop(signal = 'SIGTERM', timeoutMs = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) {
        killGroup('SIGKILL'); // leftovers of a launcher that exited
        return child.exitCode;
      }
      // SIGTERM and SIGINT go to the process, which stops what it started; SIGKILL goes to the whole group.
      if (signal === 'SIGKILL') killGroup('SIGKILL');
      else child.kill(signal);
      const timer = setTimeout(() => killGroup('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
