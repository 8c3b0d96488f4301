/**
 * The workflow bundle a worker loads instead of bundling workflows/ at start (the image builds it once, DESIGN 7):
 * our workflows plus the OpenTelemetry workflow interceptors, so that one bundle serves a worker with or without
 * tracing. A prebuilt bundle cannot take interceptors later: the SDK ignores a plugin's workflow modules then.
 */
import { createRequire } from 'node:module';
import { bundleWorkflowCode, type InjectedSinks } from '@temporalio/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import { workflowsPath } from './workflows-path.js';

/** Where `npm run bundle` writes the bundle unless given a path (relative to the working directory). */
export const DEFAULT_WORKFLOW_BUNDLE = 'dist/workflow-bundle.js';

const require = createRequire(import.meta.url);

/** The workflow interceptor module that Temporal's OpenTelemetryPlugin adds when it bundles at start. */
export const tracingInterceptorsPath = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** Bundles workflows/ with the tracing interceptors; resolves with the bundle's code. */
export async function bundleWorkflows(): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [tracingInterceptorsPath],
    // Webpack's progress is noise in a build log; its errors still reach stderr.
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
  });
  return code;
}

/**
 * The sink the bundle's tracing interceptors export workflow spans to, for a worker without tracing: it drops them
 * (an unregistered sink would log an error for every span). With tracing on, the plugin's own sink replaces it.
 */
export const discardedWorkflowSpans: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn() {}, callDuringReplay: false } },
};
