/**
 * A test file's bridge on a worker of its own beside real @a2a-js/sdk agents, started in the file's `beforeAll` and
 * closed in its `afterAll`.
 */
import { afterAll, beforeAll } from 'vitest';
import { startTestAgent, type TestAgent, type TestAgentOptions } from './agent.js';
import type { PrincipalSpec } from './agents.js';
import { startBridgeEnv, type BridgeEnv } from './bridge.js';

/** A test file's bridge from `useAgentBridge`, and its real agents by principal id. */
export interface AgentBridge {
  env: BridgeEnv;
  agents: Record<string, TestAgent>;
}

/**
 * One test file's bridge (`startBridgeEnv` named `name`) and a real agent per entry of `agents` (principal id → the
 * agent's options), that principal's card being the agent's; beside them the principals `others` answers when the
 * hook runs (a card server the file started before may give their card URLs). Started in `beforeAll`, closed in
 * `afterAll`: the objects are filled in when the hook has run.
 */
export function useAgentBridge(
  name: string,
  agents: Record<string, TestAgentOptions>,
  others: () => PrincipalSpec[] = () => [],
): AgentBridge {
  const fixture: AgentBridge = { env: {} as BridgeEnv, agents: {} };
  let started: BridgeEnv | undefined;
  beforeAll(async () => {
    for (const [id, options] of Object.entries(agents)) fixture.agents[id] = await startTestAgent(options);
    const withAgents = Object.entries(fixture.agents).map(([id, agent]): PrincipalSpec => ({
      id,
      roles: ['agent'],
      cardUrl: agent.cardUrl,
    }));
    started = await startBridgeEnv([...withAgents, ...others()], { name });
    Object.assign(fixture.env, started);
  });
  afterAll(async () => {
    await started?.close();
    await Promise.all(Object.values(fixture.agents).map((agent) => agent.close()));
  });
  return fixture;
}
