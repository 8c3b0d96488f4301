/**
 * The worker's side of workflows/statistics.ts: how each expectation ended and how long its subject took, recorded
 * on Temporal's meter (served with the SDK's own metrics) and on the bridge's prom-client twins when both run in one
 * process. Kinds past the first MAX_KIND_LABELS are labelled `other`, so the series stay bounded.
 */
import { Runtime, type InjectedSinks } from '@temporalio/worker';
import type { Figures } from '../../core/statistics.js';
import type { WatcherSinks } from '../../workflows/statistics.js';
import { boundedLabels, type WatcherMetrics } from '../metrics.js';

/** Scraped as `watcher_expectations_closed_total` (countersTotalSuffix), the name of the bridge's twin. */
export const EXPECTATIONS_CLOSED = 'watcher_expectations_closed';
export const TIME_TO_SATISFY = 'watcher_time_to_satisfy_seconds';
export const SATISFIED_EARLY = 'watcher_satisfied_early_seconds';
export const SATISFIED_LATE = 'watcher_satisfied_late_seconds';

/** The sinks for `Worker.create({ sinks })`; never called on replay, so a history replayed counts nothing twice. */
export function statisticsSinks(options: { metrics?: WatcherMetrics } = {}): InjectedSinks<WatcherSinks> {
  const kindLabel = options.metrics?.kindLabel ?? boundedLabels();
  let meter: ReturnType<typeof instruments> | undefined;
  const record = (figures: Figures) => {
    meter ??= instruments();
    const twins = options.metrics;
    const kind = kindLabel(figures.kind);
    const labels = { kind, outcome: figures.outcome, lapse: figures.lapse ?? 'none' };
    meter.closed.add(1, labels);
    twins?.expectationsClosed.inc(labels);
    if (figures.timeToSatisfySeconds !== undefined) {
      meter.timeToSatisfy.record(figures.timeToSatisfySeconds, { kind });
      twins?.timeToSatisfy.observe({ kind }, figures.timeToSatisfySeconds);
    }
    const relative = figures.relativeToDueSeconds;
    if (relative === undefined) return;
    // The meter takes magnitudes only: late by, or early by.
    const [histogram, twin] = relative > 0 ? [meter.late, twins?.satisfiedLate] : [meter.early, twins?.satisfiedEarly];
    histogram.record(Math.abs(relative), { kind });
    twin?.observe({ kind }, Math.abs(relative));
  };
  return { watcherStatistics: { closed: { fn: (_info, figures) => record(figures), callDuringReplay: false } } };
}

/** Made on first use: the process's runtime is installed (with its exporter) before any expectation closes. */
function instruments() {
  const meter = Runtime.instance().metricMeter;
  const histogram = (name: string, description: string) => meter.createHistogram(name, 'float', '', description);
  return {
    closed: meter.createCounter(EXPECTATIONS_CLOSED, '', 'Expectations closed, by kind, outcome and lapse type'),
    timeToSatisfy: histogram(TIME_TO_SATISFY, 'From the raise to the satisfying fact observedAt, by kind'),
    early: histogram(SATISFIED_EARLY, 'How long before dueAt the satisfying fact was observed, by kind'),
    late: histogram(SATISFIED_LATE, 'How long after dueAt the satisfying fact was observed, by kind'),
  };
}
