/**
 * The Temporal SDK's warnings during a run: counted by message and printed once each, so that a flood of the same
 * warning (e.g. activities completing after their timeout under load) shows as a count in the report.
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { progress } from './progress.js';

const counts = new Map<string, number>();
const IDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:\d+)*/gi;

/** Counts `key`, printing `line` the first time. */
function count(key: string, line: string): void {
  const seen = counts.get(key) ?? 0;
  counts.set(key, seen + 1);
  if (seen === 0) progress(line);
}

/** Installs the counting logger on the SDK runtime (WARN and above); run and task ids are taken out of the key. */
export function installSdkLog(): void {
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry: LogEntry) => {
      count(
        entry.message.replace(IDS, '<id>').slice(0, 160),
        `SDK ${entry.level}: ${entry.message.slice(0, 300)} (counted, printed once)`,
      );
    }),
    // Core's own (Rust) warnings come through the same logger instead of straight to stderr.
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'WARN' }, forward: {} } },
  });
}

/** Counts the test agent's console warning for each lapse whose origin task its @a2a-js/sdk server never saw. */
export function countAgentConsoleWarnings(): void {
  const warn = console.warn.bind(console);
  console.warn = (...args: unknown[]) => {
    const text = args.map(String).join(' ');
    if (!/^Reference task .* not found\.$/.test(text)) return warn(...args);
    count('agent SDK: Reference task <id> not found.', `${text} (the agent's SDK; counted, printed once)`);
  };
}

/** Warnings so far: message → count. */
export const sdkWarnings = (): Record<string, number> => Object.fromEntries(counts);
