/**
 * The baseline's one activity: records when a timer's workflow reached it (the raw counterpart of a lapse delivery).
 */

export interface BaselineActivities {
  fired(id: string, dueMs: number): Promise<void>;
}

/** The activities, writing each firing's wall-clock time into `firedAt` (id → ms). */
export function createBaselineActivities(firedAt: Map<string, number>): BaselineActivities {
  return {
    async fired(id) {
      firedAt.set(id, Date.now());
    },
  };
}
