/**
 * The Temporal SDK's warnings during a run: counted by message and printed once each, so that a flood of the same
 * warning (e.g. activities completing after their timeout under load) shows as a count in the report.
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { progress } from './progress.js';

const counts = new Map<string, number>();

/** A message with its run and task ids taken out, so that one warning about 200 workflows is counted as one. */
const keyOf = (message: string): string =>
  message.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:\d+)*/gi, '<id>').slice(0, 160);

/** Installs the counting logger on the SDK runtime (WARN and above). */
export function installSdkLog(): void {
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry: LogEntry) => {
      const key = keyOf(entry.message);
      const seen = counts.get(key) ?? 0;
      counts.set(key, seen + 1);
      if (seen === 0) progress(`SDK ${entry.level}: ${entry.message.slice(0, 300)} (counted, printed once)`);
    }),
    // Core's own (Rust) warnings come through the same logger instead of straight to stderr.
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'WARN' }, forward: {} } },
  });
}

/**
 * The test agent's @a2a-js/sdk server warns on the console for every lapse whose referenceTaskIds it does not hold
 * (it never saw the origin task): counted like the SDK's warnings instead of flooding the progress lines.
 */
export function countAgentConsoleWarnings(): void {
  const warn = console.warn.bind(console);
  console.warn = (...args: unknown[]) => {
    const text = args.map(String).join(' ');
    if (/^Reference task .* not found\.$/.test(text)) {
      const key = 'agent SDK: Reference task <id> not found.';
      const seen = counts.get(key) ?? 0;
      counts.set(key, seen + 1);
      if (seen === 0) progress(`${text} (the agent's SDK; counted, printed once)`);
      return;
    }
    warn(...args);
  };
}

/** Warnings so far: message → count. */
export function sdkWarnings(): Record<string, number> {
  return Object.fromEntries(counts);
}
