// How another process runs this folder's command: Node with tsx's loader (resolved here, so
// the caller's working directory does not matter) and testbed/cli.ts. The test bed is dev
// tooling and is never compiled into dist/.
import { fileURLToPath } from 'node:url';

export const testbedCli = fileURLToPath(new URL('./cli.ts', import.meta.url));

/**
 * Node's own flags for the test bed's processes, from TESTBED_NODE_FLAGS (space-separated): for a
 * bench that asks what V8 does in the service (`--trace-opt --trace-deopt`, a heap size, ...);
 * NODE_OPTIONS refuses most of V8's flags. None when unset.
 */
export const testbedNodeFlags = (env: NodeJS.ProcessEnv = process.env): string[] => env.TESTBED_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];

/** `process.execPath` with these arguments runs `testbed <args>`. */
export const testbedArgs = (args: string[]): string[] => [...testbedNodeFlags(), '--import', import.meta.resolve('tsx'), testbedCli, ...args];

/** The product's own command line from source, the same way (`cli/main.ts` under tsx). */
export const productArgs = (args: string[]): string[] => ['--import', import.meta.resolve('tsx'), fileURLToPath(new URL('../cli/main.ts', import.meta.url)), ...args];
