/** What the ingest service is made of and answers (ingest.ts, raise-room.ts, ingest-apply.ts). */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { CardResolver } from '../../activities/agent-card/card.js';
import type { WatcherMetrics } from '../metrics.js';
import type { ingestResultSchema } from '../schemas/http.js';
import type { QuotaSettings } from './quotas.js';
import type { TemporalCall } from './temporal-call.js';

export interface IngestSettings {
  factRetention: string;
  lateWindow: string;
  maxLineage: number;
  /** How far in the future a fact's `observedAt` may be (ISO 8601 duration, WATCHER_MAX_CLOCK_SKEW). */
  maxClockSkew: string;
  /** The workflows' settle interval (ExpectationSettings.settle): the fact wait and a margin. */
  settle?: string;
  /** How long a request's facts may take to be stored before a 503 (WATCHER_FACT_WAIT, ms); default 2,000. */
  factWaitMs?: number;
  /**
   * How long a call to Temporal may take (WATCHER_TEMPORAL_WAIT, ms): also each router signal's deadline, which carries
   * other requests' facts and so is sent outside any one request's (src/temporal/expectations.ts storeFacts).
   */
  temporalWaitMs?: number;
}

export interface IngestDeps {
  client: Client;
  taskQueue: string;
  settings: IngestSettings;
  cards: CardResolver;
  call: TemporalCall;
  /**
   * The call that stores facts: no probe of the workers, as storing a fact needs none (DESIGN 3.2). Absent, `call`.
   */
  factCall?: TemporalCall;
  metrics?: WatcherMetrics;
  /** Where a fact that came after its expectation's late window is logged. */
  logger?: Logger;
  /** Per-principal quotas (src/service/quotas.ts); absent, none is kept. */
  quotas?: QuotaSettings;
  /** The watcher's clock (epoch ms); injected so a test can pin it. */
  now?: () => number;
  /**
   * How long nine in ten of the agent's recent expectations of a kind needed, in seconds (StatisticsService): a raise
   * of an `observed` kind due sooner is warned. Absent, no raise is.
   */
  observedNeed?: (agentId: string, kind: string) => Promise<number | undefined>;
}

/** One result per item, in the order found; `warnings` only when there is one (the schema is the answer's, in http.ts). */
export type IngestResult = z.infer<typeof ingestResultSchema>;
