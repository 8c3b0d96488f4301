/**
 * Test processes log Temporal's SDK messages at WARN and above only, so failures stand out in the output.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed in this process: keep the existing runtime.
}
