/**
 * The places on fact keys and subjects that this bridge's own requests have taken and its stores may not show yet,
 * taken in the same synchronous step as the plan, so that no two requests through one bridge get one place (bridges
 * beside each other still race: RACE_ROOM is left for them, DESIGN 6.1).
 */

/** How long a place stays held once its request has answered: the stores show the expectation well before. */
export const PLACE_LAG_MS = 10_000;

export class Places {
  /** Load key → workflow id → when the place is let go (epoch ms; Infinity while its request runs). */
  private readonly held = new Map<string, Map<string, number>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The workflow ids holding places on `loadKey` now. */
  holders(loadKey: string): string[] {
    const places = this.held.get(loadKey);
    if (!places) return [];
    const now = this.now();
    for (const [workflowId, until] of places) if (until <= now) places.delete(workflowId);
    if (places.size === 0) this.held.delete(loadKey);
    return [...places.keys()];
  }

  /**
   * Takes a place for each workflow id on its load key, held until `release` and PLACE_LAG_MS after. Releasing twice
   * is harmless.
   */
  take(places: ReadonlyArray<{ loadKey: string; workflowId: string }>): () => void {
    for (const { loadKey, workflowId } of places) {
      let onKey = this.held.get(loadKey);
      if (!onKey) this.held.set(loadKey, (onKey = new Map()));
      onKey.set(workflowId, Number.POSITIVE_INFINITY);
    }
    return () => {
      const until = this.now() + PLACE_LAG_MS;
      for (const { loadKey, workflowId } of places) {
        const onKey = this.held.get(loadKey);
        if (onKey?.get(workflowId) === Number.POSITIVE_INFINITY) onKey.set(workflowId, until);
      }
    };
  }

  /** Lets go of the places these workflow ids hold on `loadKey` (their expectations have ended). */
  forget(loadKey: string, workflowIds: readonly string[]): void {
    const onKey = this.held.get(loadKey);
    for (const workflowId of workflowIds) onKey?.delete(workflowId);
  }
}
