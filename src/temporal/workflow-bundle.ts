/**
 * The prebuilt workflow bundles a worker loads (DESIGN 7): ours alone, and the same with the OpenTelemetry workflow
 * interceptors for a worker with tracing on, which a prebuilt bundle cannot take later (in the sandbox they cost about
 * half of every workflow task's CPU, BENCHMARKS.md, so a worker without tracing loads the plain one).
 */
import { createRequire } from 'node:module';
import { bundleWorkflowCode, type InjectedSinks } from '@temporalio/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import { workflowsPath } from './workflows-path.js';

/** Where `npm run bundle` writes the bundle unless given a path (relative to the working directory). */
export const DEFAULT_WORKFLOW_BUNDLE = 'dist/workflow-bundle.js';

const require = createRequire(import.meta.url);

/** The workflow interceptor module that Temporal's OpenTelemetryPlugin adds when it bundles at start. */
export const tracingInterceptorsPath =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/**
 * Bundles workflows/, with the tracing interceptors when `tracing`; resolves with the bundle's code, whose source map
 * maps each line of the bundle to itself unless `sourcePositions` (withLineSourceMap).
 */
export async function bundleWorkflows(options: { tracing?: boolean; sourcePositions?: boolean } = {}): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    ...(options.tracing ? { workflowInterceptorModules: [tracingInterceptorsPath] } : {}),
    // Webpack's progress is noise in a build log; its errors still reach stderr.
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  return options.sourcePositions ? code : withLineSourceMap(code);
}

const INLINE_SOURCE_MAP = /\n\/\/# sourceMappingURL=data:application\/json[^\n]*\n?/g;

/**
 * The bundle with its inline source map replaced by one that maps each line of the bundle to the same line of
 * `workflow-bundle.js`. The SDK records a stack trace for every promise a workflow creates (for the stack trace
 * query), and maps each frame through the bundle's source map: with webpack's full map that was a third of a
 * replay's CPU (12-07: 15 rounds of four recorded histories, 20.1 s of CPU with the full map, 13.3 s with this one).
 * Frames keep their function names and read `workflow-bundle.js:<line>`; `npm run bundle -- --source-positions`
 * keeps the full map for a debugging session. The SDK requires an inline map, so one is always there.
 */
export function withLineSourceMap(code: string, file = 'workflow-bundle.js'): string {
  const stripped = code.replace(INLINE_SOURCE_MAP, '\n').trimEnd();
  const lines = stripped.split('\n').length;
  // One segment a line: generated column 0 → source 0, the next original line, column 0 (VLQ AAAA, then AACA).
  const map = { version: 3, file, sources: [file], names: [], mappings: `AAAA${';AACA'.repeat(lines - 1)}` };
  const encoded = Buffer.from(JSON.stringify(map)).toString('base64');
  return `${stripped}\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${encoded}\n`;
}

/**
 * The tracing bundle that `npm run bundle` writes beside `file`, which a worker with tracing on loads in its place:
 * `dist/workflow-bundle.js` → `dist/workflow-bundle.tracing.js` (a tracing bundle itself stays as it is).
 */
export function tracingBundleOf(file: string): string {
  if (file.endsWith('.tracing.js')) return file;
  return file.endsWith('.js') ? `${file.slice(0, -'.js'.length)}.tracing.js` : `${file}.tracing.js`;
}

/**
 * The sink a tracing bundle's interceptors export workflow spans to, for a worker without tracing told to load one
 * anyway: it drops them (an unregistered sink would log an error for every span). With tracing on, the plugin's own
 * sink replaces it.
 */
export const discardedWorkflowSpans: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn() {}, callDuringReplay: false } },
};
