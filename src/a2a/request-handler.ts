/**
 * The SDK's DefaultRequestHandler, with its error texts made readable: it quotes task states by their enum number
 * ("is in a terminal state (7)", "Invalid status filter: -1"); the watcher's answers quote the name
 * (TASK_STATE_REJECTED), the form A2A v1.0 ProtoJSON puts on the wire.
 */
import { TaskState, type ListTasksRequest, type SendMessageRequest } from '@a2a-js/sdk';
import { A2AError } from '@a2a-js/sdk/errors';
import { DefaultRequestHandler, type ServerCallContext } from '@a2a-js/sdk/server';

/** `text` with every state number the SDK puts in its messages replaced by the state's name. */
export function withStateNames(text: string): string {
  const name = (n: string) => (TaskState[Number(n)] as string | undefined) ?? `an unknown state (${n})`;
  return text
    .replace(/terminal state \((-?\d+)\)/g, (_all, n: string) => `terminal state (${name(n)})`)
    .replace(/Invalid status filter: (-?\d+)/g, (_all, n: string) => `Invalid status filter: ${name(n)}`);
}

/** Rewrites the message of an A2A error in place (its class, and so its JSON-RPC code, stay as they are). */
function named(error: unknown): unknown {
  if (error instanceof A2AError) error.message = withStateNames(error.message);
  return error;
}

/** DefaultRequestHandler whose errors name task states (the methods whose SDK texts quote one). */
export class WatcherRequestHandler extends DefaultRequestHandler {
  override async sendMessage(params: SendMessageRequest, context: ServerCallContext) {
    try {
      return await super.sendMessage(params, context);
    } catch (error) {
      throw named(error);
    }
  }

  override async listTasks(params: ListTasksRequest, context: ServerCallContext) {
    try {
      return await super.listTasks(params, context);
    } catch (error) {
      throw named(error);
    }
  }
}
