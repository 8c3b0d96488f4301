/**
 * A small OTLP/HTTP trace receiver (JSON bodies, as our tracing exports them): the spans it was sent, with the
 * service that sent each.
 */
import type { Server } from 'node:http';
import express from 'express';
import { close, listen, urlOf } from './net.js';

export interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
}

export interface OtlpReceiver {
  /** The value for OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  /** Every span received so far, in arrival order. */
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const app = express();
  app.post('/v1/traces', express.json({ limit: '20mb' }), (req, res) => {
    collect(req.body, spans);
    res.json({});
  });
  const server: Server = await listen(app);
  return { endpoint: urlOf(server), spans, close: () => close(server) };
}

/** Reads the OTLP/HTTP JSON body of an export request. */
function collect(body: any, into: ReceivedSpan[]): void {
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service =
      resourceSpans.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue ?? '';
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        into.push({
          service,
          name: span.name,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId || undefined,
        });
      }
    }
  }
}
