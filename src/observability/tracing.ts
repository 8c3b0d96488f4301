/**
 * Optional OpenTelemetry tracing, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: Temporal's OpenTelemetry plugin
 * on the bridge's client (StartWorkflow, SignalWithStart, UpdateWithStart… spans, their context carried in the
 * workflow headers) and on the worker (RunWorkflow, StartActivity, RunActivity spans; the workflow's own spans leave
 * the sandbox through a sink), exported over OTLP/HTTP. A raise through the bridge and the workflow it starts are one
 * trace.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';

export interface Tracing {
  /** Pass to `new Client({ plugins })` and `Worker.create({ plugins })`. */
  plugin: OpenTelemetryPlugin;
  /** Flushes the spans not yet exported, then stops. */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

/**
 * Registers the process's tracer provider exporting to `endpoint` (the collector's base URL, `/v1/traces` is
 * appended) under `serviceName`. Once per process: a second call returns the first one.
 */
export function startTracing(options: { endpoint: string; serviceName: string }): Tracing {
  if (installed) return installed;
  const resource = new Resource({ 'service.name': options.serviceName });
  const spanProcessor = new BatchSpanProcessor(
    new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, '')}/v1/traces` }),
    { scheduledDelayMillis: 1_000 },
  );
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  const tracing: Tracing = {
    plugin: new OpenTelemetryPlugin({ resource, spanProcessor }),
    shutdown: async () => {
      await provider.shutdown();
      installed = undefined;
    },
  };
  installed = tracing;
  return tracing;
}
