/**
 * Structured JSON logs (pino). Child loggers carry `expectationId` and `workflowId` where they are known.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** The process logger, writing JSON lines to stdout. */
export function createLogger(level: string, name = 'expectations-watcher'): Logger {
  return pino({ name, level });
}
