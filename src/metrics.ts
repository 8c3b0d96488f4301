/**
 * Prometheus metrics (prom-client) on a registry of their own, so that several apps in one process (tests) do not
 * collide and so that the worker side can register its lapse counters on the same registry.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SECONDS_BUCKETS } from '../core/statistics.js';

/** Distinct `kind` label values kept; the kinds first seen past it are counted as `other`, so a series set stays bounded. */
export const MAX_KIND_LABELS = 200;

export interface WatcherMetrics {
  registry: Registry;
  expectationsRaised: Counter<'kind'>;
  /** The `kind` label for a kind: itself among the first MAX_KIND_LABELS seen, `other` past them. */
  kindLabel(kind: string): string;
  factsRecorded: Counter<never>;
  withdrawals: Counter<never>;
  /** Facts that came for expectations already closed after their late window (src/service/late-facts.ts). */
  factsAfterLateWindow: Counter<never>;
  /** Incremented by the worker side (lapse activities), registered here so /metrics shows it from the start. */
  lapses: Counter<'lapse'>;
  lapseDeliveriesFailed: Counter<never>;
  /** How expectations ended and how long their subjects took (src/observability/statistics-sink.ts). */
  expectationsClosed: Counter<'kind' | 'outcome' | 'lapse'>;
  timeToSatisfy: Histogram<'kind'>;
  satisfiedEarly: Histogram<'kind'>;
  satisfiedLate: Histogram<'kind'>;
  httpRequestDuration: Histogram<'method' | 'route' | 'status'>;
  /** Requests the bridge serves now, against WATCHER_MAX_REQUESTS_IN_FLIGHT. */
  requestsInFlight: Gauge;
}

/** Creates the watcher's metrics on `registry` (a new one by default). */
export function createMetrics(options: { registry?: Registry; defaultMetrics?: boolean } = {}): WatcherMetrics {
  const registry = options.registry ?? new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    kindLabel: boundedLabels(),
    expectationsRaised: new Counter({
      name: 'watcher_expectations_raised_total',
      help: 'Expectations raised (new workflows started), by kind.',
      labelNames: ['kind'],
      registers: [registry],
    }),
    factsRecorded: new Counter({
      name: 'watcher_facts_recorded_total',
      help: 'Facts recorded in a fact router (duplicates not counted).',
      registers: [registry],
    }),
    withdrawals: new Counter({
      name: 'watcher_withdrawals_total',
      help: 'Expectations withdrawn through the bridge (artifact withdraw lists and the HTTP call).',
      registers: [registry],
    }),
    factsAfterLateWindow: new Counter({
      name: 'watcher_facts_after_late_window_total',
      help: 'Facts recorded after the late window of every expectation waiting on their key: they satisfy nothing.',
      registers: [registry],
    }),
    lapses: new Counter({
      name: 'watcher_lapses_total',
      help: 'Lapses raised, by type (overdue, skipped, stalled).',
      labelNames: ['lapse'],
      registers: [registry],
    }),
    lapseDeliveriesFailed: new Counter({
      name: 'watcher_lapse_deliveries_failed_total',
      help: 'Lapse tasks the agent refused or that could not be delivered.',
      registers: [registry],
    }),
    expectationsClosed: new Counter({
      name: 'watcher_expectations_closed_total',
      help: 'Expectations closed, by kind, outcome (satisfied_on_time, satisfied_late, withdrawn, lapsed) and lapse type.',
      labelNames: ['kind', 'outcome', 'lapse'],
      registers: [registry],
    }),
    timeToSatisfy: new Histogram({
      name: 'watcher_time_to_satisfy_seconds',
      help: 'From the raise to the satisfying fact observedAt, by kind.',
      labelNames: ['kind'],
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    }),
    satisfiedEarly: new Histogram({
      name: 'watcher_satisfied_early_seconds',
      help: 'How long before dueAt the satisfying fact was observed, by kind (on-time satisfactions).',
      labelNames: ['kind'],
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    }),
    satisfiedLate: new Histogram({
      name: 'watcher_satisfied_late_seconds',
      help: 'How long after dueAt the satisfying fact was observed, by kind (late satisfactions).',
      labelNames: ['kind'],
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    }),
    requestsInFlight: new Gauge({
      name: 'watcher_http_requests_in_flight',
      help: 'Requests the bridge serves now; past WATCHER_MAX_REQUESTS_IN_FLIGHT one is answered 503 before any work.',
      registers: [registry],
    }),
    httpRequestDuration: new Histogram({
      name: 'watcher_http_request_duration_seconds',
      help: 'Duration of HTTP requests to the bridge, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
  };
}

/** A label for a kind: itself among the first MAX_KIND_LABELS seen by this function, `other` past them. */
export function boundedLabels(): (kind: string) => string {
  const kinds = new Set<string>();
  return (kind) => {
    if (kinds.has(kind)) return kind;
    if (kinds.size >= MAX_KIND_LABELS) return 'other';
    kinds.add(kind);
    return kind;
  };
}
