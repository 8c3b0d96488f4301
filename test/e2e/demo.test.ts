/**
 * `npm run demo` on the shared dev server (TEMPORAL_ADDRESS): the plan is raised, a step lapses, the demo agent
 * gets the lapse task, the late fact satisfies it, the UI links are printed, and the demo stops by itself.
 */
import { describe, expect, inject, it } from 'vitest';
import { spawnEntry } from '../support/processes.js';

describe('npm run demo', () => {
  it('raises a plan, delivers one lapse task to the agent, prints the UI links and exits 0', async () => {
    const demo = spawnEntry('demo/run.ts', {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_UI_URL: inject('temporalUiUrl'),
    });

    const code = await demo.exited;

    const output = demo.output();
    expect(code, output).toBe(0);
    expect(output).toMatch(/"result":"raised"}.*"result":"raised"}.*"result":"raised"}/);
    expect(output).toMatch(/watcher → agent \(A2A SendMessage\): lapse task [0-9a-f-]{36}/);
    expect(output).toMatch(/data: \{"expectationId":"S-\w+-transit-\w+".*"lapse":"overdue"/);
    expect(output).toMatch(/S-\w+-transit-\w+ satisfied late \(late: true\)/);
    expect(output).toMatch(/lapses: overdue → delivered/);
    expect(output).toContain(
      `${inject('temporalUiUrl')}/namespaces/default/workflows?query=ExpectationSubject%3D%22shipment%2FS-`,
    );
  }, 120_000);
});
