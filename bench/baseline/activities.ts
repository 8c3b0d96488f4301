/** The baseline's one activity: records when a timer's workflow reached it (the raw counterpart of a lapse delivery). */
import { appendFileSync } from 'node:fs';

export interface BaselineActivities {
  fired(id: string, dueMs: number): Promise<void>;
}

/** Each firing's wall-clock ms into `firedAt` by id, and, in a worker process of its own, `<id> <ms>` to `firedFile`. */
export function createBaselineActivities(firedAt: Map<string, number>, firedFile?: string): BaselineActivities {
  return {
    async fired(id) {
      const at = Date.now();
      firedAt.set(id, at);
      if (firedFile) appendFileSync(firedFile, `${id} ${at}\n`);
    },
  };
}
