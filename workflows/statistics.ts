/**
 * The worker's figures of what a kind actually does (core/statistics.ts), told to the worker process through a sink
 * when an expectation closes: no command, no history event, nothing on replay. The worker records them as metrics.
 */
import { proxySinks, type Sinks } from '@temporalio/workflow';
import { figuresOf, type Figures } from '../core/statistics.js';
import type { ExpectationRecord } from '../core/types.js';

export interface WatcherSinks extends Sinks {
  watcherStatistics: { closed(figures: Figures): void };
}

const { watcherStatistics } = proxySinks<WatcherSinks>();

/** Tells the worker how the expectation ended. */
export function reportClosed(record: ExpectationRecord): void {
  const figures = figuresOf(record);
  if (figures.outcome !== 'open') watcherStatistics.closed(figures);
}
