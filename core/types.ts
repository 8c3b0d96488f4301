/**
 * The seed's vocabulary as types, for workflows, activities and the bridge alike. The zod schemas in src/schemas
 * stay the only source of each type (z.infer); this module re-exports them as types only, so that importing it
 * loads nothing at run time.
 */
export type {
  Expectation,
  ExpectationKind,
  ExpectationState,
  Fact,
  Lapse,
  LapseKind,
  Subject,
} from './schemas/extension.js';
export type { ExpectationRecord, LapseEntry, Origin } from './schemas/record.js';
