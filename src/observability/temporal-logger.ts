/**
 * Temporal's SDK logs (worker, workflow `log`, activity `Context.log`, forwarded Core logs) as pino JSON lines, so
 * the worker writes one format. The SDK puts workflowId, runId, activityType, taskQueue and the like in `meta`;
 * those become fields of the line.
 */
import type { LogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import type { Logger } from 'pino';

const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** A Temporal `Logger` writing through `log`. */
export function temporalLogger(log: Logger): TemporalLogger {
  const write = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const method = levels[level] ?? 'info';
    if (!meta) {
      log[method](message);
      return;
    }
    // pino serialises an Error only under `err`; the SDK passes failures as `error` (or `failure`).
    const { error, ...rest } = meta as { error?: unknown };
    log[method](error instanceof Error ? { ...rest, err: error } : meta, message);
  };
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}
