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

/** Bundles workflows/, with the tracing interceptors when `tracing`; resolves with the bundle's code. */
export async function bundleWorkflows(options: { tracing?: boolean } = {}): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    ...(options.tracing ? { workflowInterceptorModules: [tracingInterceptorsPath] } : {}),
    // Webpack's progress is noise in a build log; its errors still reach stderr.
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  return code;
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
