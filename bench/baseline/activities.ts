/**
 * The baseline's one activity: records when a timer's workflow reached it (the raw counterpart of a lapse delivery).
 */
import { appendFileSync } from 'node:fs';

export interface BaselineActivities {
  fired(id: string, dueMs: number): Promise<void>;
}

/**
 * The activities, writing each firing's wall-clock time into `firedAt` (id → ms), and, in a worker process of its
 * own, a line `<id> <ms>` to `firedFile` for the benchmark to read.
 */
export function createBaselineActivities(firedAt: Map<string, number>, firedFile?: string): BaselineActivities {
  return {
    async fired(id) {
      const at = Date.now();
      firedAt.set(id, at);
      if (firedFile) appendFileSync(firedFile, `${id} ${at}\n`);
    },
  };
}
