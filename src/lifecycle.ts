/**
 * What an entry point has started, stopped in reverse order on SIGINT/SIGTERM at any moment, start-up included.
 *
 * The entry points install this before they load anything else (their work is imported dynamically afterwards): a
 * signal while Node is still loading and compiling the modules would otherwise kill the process with 143. A piece
 * that is still starting when the signal comes is stopped as soon as it is up, so nothing it spawned outlives us.
 * This module imports nothing at run time, to be loaded first and fast.
 */
import type { Logger } from 'pino';

export interface Running {
  stop(): Promise<void>;
}

/** Thrown by `Lifecycle.start` once a signal has come: start-up ends there, and the lifecycle stops what is up. */
export class StartAborted extends Error {
  override name = 'StartAborted';
}

/** What src/early-signals.mjs leaves on globalThis. */
interface EarlySignals {
  signal?: NodeJS.Signals;
  remove(): void;
}

/** Error names whose message alone is what a user needs (a configuration or provisioning problem, not a bug). */
const PLAIN_ERRORS = new Set([
  'ConfigError',
  'ProvisionError',
  'PostgresError',
  'PortInUseError',
  'SearchAttributesError',
]);

export class Lifecycle {
  private readonly pieces: Running[] = [];
  private readonly starting = new Set<Promise<unknown>>();
  private stoppingSince: number | undefined;
  private log: Pick<Logger, 'info' | 'error'> | undefined;

  /**
   * A lifecycle that stops on SIGINT and SIGTERM. A second signal exits at once, unless it comes within a second of
   * the first: one Ctrl-C reaches us several times (from the terminal, and relayed by npm).
   */
  static onSignals(): Lifecycle {
    const lifecycle = new Lifecycle();
    const handler = (signal: NodeJS.Signals) => {
      if (lifecycle.stoppingSince !== undefined) {
        if (Date.now() - lifecycle.stoppingSince < 1_000) return;
        process.exit(1);
      }
      void lifecycle.stopAndExit(undefined, signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
    // A signal that came before this module ran, while Node and tsx were starting (src/early-signals.mjs kept it).
    const early = (globalThis as Record<symbol, EarlySignals | undefined>)[
      Symbol.for('expectations-watcher.early-signals')
    ];
    early?.remove();
    if (early?.signal) handler(early.signal);
    return lifecycle;
  }

  /** Where "stopping" and errors while stopping are logged once the process has a logger (stderr before that). */
  useLogger(log: Pick<Logger, 'info' | 'error'>): void {
    this.log = log;
  }

  /** True once a signal has come. */
  get stopping(): boolean {
    return this.stoppingSince !== undefined;
  }

  /** Starts a piece and keeps it to stop later; once a signal has come, throws StartAborted instead (after stopping it). */
  async start<T extends Running>(start: () => Promise<T>): Promise<T> {
    if (this.stopping) throw new StartAborted('stopping: not starting anything else');
    const started = start();
    this.starting.add(started);
    try {
      const piece = await started;
      this.pieces.push(piece);
      if (this.stopping) throw new StartAborted('stopping: start-up ends here');
      return piece;
    } finally {
      this.starting.delete(started);
    }
  }

  /** Keeps a piece that is already running, to stop it with the others. */
  add(piece: Running): void {
    this.pieces.push(piece);
  }

  /**
   * Runs an entry point's start-up. A StartAborted ends it quietly (the signal's stop is under way); any other error
   * is printed (only the message for configuration and provisioning errors), what is up is stopped, and the process
   * exits 1.
   */
  async run(main: () => Promise<void>): Promise<void> {
    try {
      await main();
    } catch (error) {
      if (error instanceof StartAborted || this.stopping) return;
      const plain = error instanceof Error && PLAIN_ERRORS.has(error.name);
      console.error(plain ? (error as Error).message : error);
      await this.stopAndExit(1);
    }
  }

  /**
   * Stops every piece in reverse start order (waiting for any still starting), then exits with `code`, or after a
   * signal with the exit code a piece set (a worker that died) or 0.
   */
  private async stopAndExit(code: number | undefined, signal?: NodeJS.Signals): Promise<void> {
    if (this.stoppingSince !== undefined) return;
    this.stoppingSince = Date.now();
    if (signal) this.note('info', { signal }, 'stopping');
    // A piece still starting registers itself when it is up (or fails); then it is stopped with the rest.
    while (this.starting.size > 0) await Promise.allSettled([...this.starting]);
    for (const piece of this.pieces.reverse()) {
      try {
        await piece.stop();
      } catch (error) {
        this.note('error', { err: error }, 'error while stopping');
      }
    }
    if (signal) this.note('info', {}, 'stopped');
    process.exit(code ?? (process.exitCode ? Number(process.exitCode) : 0));
  }

  private note(level: 'info' | 'error', fields: object, message: string): void {
    if (this.log) this.log[level](fields, message);
    else console.error(`${message}${'signal' in fields ? ` (${String(fields.signal)})` : ''}`);
  }
}
