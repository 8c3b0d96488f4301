/**
 * Structured logs (pino). Child loggers carry `expectationId` and `workflowId` where they are known. JSON lines,
 * except on a terminal, where a person reads them: one short line each (WATCHER_LOG_FORMAT chooses otherwise).
 */
import { inspect } from 'node:util';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** `auto`: pretty when stdout is a terminal, JSON otherwise (a file, a pipe, a log collector). */
export type LogFormat = 'auto' | 'pretty' | 'json';

/** The process logger, writing to stdout: JSON lines, or short readable lines on a terminal. */
export function createLogger(level: string, name = 'expectations-watcher', format: LogFormat = 'auto'): Logger {
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  return pretty ? pino({ name, level }, prettyLines(process.stdout)) : pino({ name, level });
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, shown by the line's layout rather than as `key=value`. */
const LAYOUT_FIELDS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name', 'err']);

/**
 * One JSON line of pino as a person reads it: `14:02:07 INFO  bridge listening url=http://localhost:3000`, an
 * error's stack on the lines below. Anything that is not JSON passes through unchanged.
 */
export function prettyLine(json: string, color = false): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 19) : '';
  const level = LEVELS[Number(entry.level)] ?? String(entry.level);
  const fields = Object.entries(entry)
    .filter(([key]) => !LAYOUT_FIELDS.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' && !/\s/.test(value) ? value : JSON.stringify(value)}`);
  const paint = (code: number, text: string) => (color ? `\u001b[${code}m${text}\u001b[0m` : text);
  const levelText = level.padEnd(5);
  const shownLevel =
    Number(entry.level) >= 50 ? paint(31, levelText) : Number(entry.level) >= 40 ? paint(33, levelText) : levelText;
  let line = [paint(2, time), shownLevel, String(entry.msg ?? ''), ...fields.map((field) => paint(2, field))].join(' ');
  const err = entry.err as { stack?: unknown; message?: unknown } | undefined;
  if (err) line += `\n  ${String(err.stack ?? err.message ?? inspect(err)).replace(/\n/g, '\n  ')}`;
  return `${line}\n`;
}

function prettyLines(out: NodeJS.WriteStream): DestinationStream {
  const color = out.hasColors?.() ?? false;
  return { write: (chunk: string) => void out.write(prettyLine(chunk.trimEnd(), color)) };
}
