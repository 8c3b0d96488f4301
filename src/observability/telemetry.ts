/**
 * The Temporal SDK runtime of a process that runs a worker: its logs go through pino (JSON lines, like the
 * bridge's), and its metrics (the SDK's own: task slots, poll and schedule-to-start latencies, activity and workflow
 * task outcomes; plus the watcher's lapse counters) are served for Prometheus at `http://<host>:<port>/metrics`.
 * Must run before anything creates a Temporal native connection, worker or embedded server.
 */
import { Runtime } from '@temporalio/worker';
import type { Logger } from 'pino';
import { ConfigError } from '../config-error.js';
import { SECONDS_BUCKETS } from '../../core/statistics.js';
import { SATISFIED_EARLY, SATISFIED_LATE, TIME_TO_SATISFY } from './statistics-sink.js';
import { temporalLogger } from './temporal-logger.js';

export interface TelemetryOptions {
  /** Port of the worker's Prometheus endpoint; 0 serves none. */
  metricsPort: number;
  /**
   * When the port cannot be bound: true throws (the operator chose it), false logs a warning and runs without the
   * endpoint (the default port, taken e.g. by a second worker on the same host).
   */
  metricsRequired?: boolean;
  /** Interface the endpoint binds to (default all). */
  metricsHost?: string;
  log: Logger;
}

export interface Telemetry {
  /** Where Prometheus scrapes the worker, when served. */
  metricsUrl?: string;
}

/** Installs the process-wide Temporal runtime with pino logging and, unless the port is 0, a Prometheus endpoint. */
export function installTelemetry(options: TelemetryOptions): Telemetry {
  const host = options.metricsHost ?? '0.0.0.0';
  const bindAddress = `${host}:${options.metricsPort}`;
  const install = (withMetrics: boolean) =>
    Runtime.install({
      logger: temporalLogger(options.log.child({ component: 'temporal' })),
      telemetryOptions: {
        // Core's own (Rust) log lines are forwarded to the logger above rather than printed in their own format.
        logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
        ...(withMetrics
          ? {
              metrics: {
                prometheus: {
                  bindAddress,
                  countersTotalSuffix: true,
                  useSecondsForDurations: true,
                  histogramBucketOverrides: {
                    [TIME_TO_SATISFY]: SECONDS_BUCKETS,
                    [SATISFIED_EARLY]: SECONDS_BUCKETS,
                    [SATISFIED_LATE]: SECONDS_BUCKETS,
                  },
                },
              },
            }
          : {}),
      },
    });
  if (options.metricsPort === 0) {
    install(false);
    return {};
  }
  try {
    install(true);
  } catch (error) {
    if (!/prometheus/i.test(String(error))) throw error;
    const reason = `cannot serve the worker's metrics on ${bindAddress} (${error instanceof Error ? error.message : String(error)})`;
    if (options.metricsRequired) {
      throw new ConfigError(
        `WATCHER_WORKER_METRICS_PORT=${options.metricsPort}: ${reason}; choose another port, or 0 to serve none`,
      );
    }
    options.log.warn(`${reason}: running without them; set WATCHER_WORKER_METRICS_PORT to another port (or 0)`);
    install(false);
    return {};
  }
  return { metricsUrl: `http://${host === '0.0.0.0' ? 'localhost' : host}:${options.metricsPort}/metrics` };
}
