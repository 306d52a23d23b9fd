// What a kernel is said to be, apart from the session that keeps it (kernel-session.ts): its
// execution state, whether a warm pool's kernel was handed out, and the model the Jupyter
// kernels API lists.

export type ExecutionState = 'starting' | 'idle' | 'busy' | 'restarting' | 'dead';
/**
 * Whether a warm pool's kernel was handed out. `unknown`: found again after a gateway restart,
 * until its launcher (which keeps the claim) says so in its hello.
 */
export type ClaimState = 'unclaimed' | 'claimed' | 'unknown';

export interface KernelModel {
  id: string;
  name: string;
  last_activity: string;
  execution_state: ExecutionState;
  connections: number;
}
