// What the gateway tells a notebook about its kernel's life (Spark failed, the driver ended, a
// request the hold could not take), and the errors its lifecycle requests answer with when what
// was asked did not happen. Pure: the words and messages, in one place.
import { GatewayError } from './gateway-error.js';
import { type JupyterMessage, refusedReply, statusMessage, stderrMessage } from './messages.js';

const MiB = 1048576;

export const sparkFailedNotice = (error: string | undefined): JupyterMessage =>
  stderrMessage(`Spark failed to start: ${error ?? 'unknown error'}\nsc, sqlContext and spark are not available in this kernel.\n`);

/** Said when the kernel is gone: why, on stderr, then `dead`. */
export const deathNotice = (why: string): JupyterMessage[] => [stderrMessage(`${why}\n`), statusMessage('dead')];

/**
 * Said when the application retried the kernel's driver (its restartPolicy): why, on stderr, then
 * `restarting`, the status jupyter_server sends when its restarter restarts a kernel that died.
 */
export const newAttemptNotice = (attempt: number): JupyterMessage[] => [
  stderrMessage(`The kernel's driver ended and its application started it again (attempt ${attempt}, the template's restartPolicy): the kernel restarted, and what it held (variables, imports) is gone.\n`),
  statusMessage('restarting'),
];

export const driverEndedNotice = (reason: string): JupyterMessage[] => deathNotice(`The kernel's driver ended: ${reason}`);

/**
 * The hold is full while the driver starts: the request fails at once, with a reason, instead of
 * growing memory. The reason on stderr, and the request's error reply when it has one.
 */
export function heldRefusal(request: JupyterMessage, heldBytes: number, capBytes: number): JupyterMessage[] {
  const why = `The kernel is still starting and ${Math.round(heldBytes / MiB)} MiB of requests already wait for it `
    + `(at most ${Math.round(capBytes / MiB)} MiB): this request was not taken. Send it again once the kernel is idle.`;
  const reply = typeof request.header.msg_type === 'string' ? refusedReply(request, why) : undefined;
  return [stderrMessage(`${why}\n`, request.header), ...(reply ? [reply] : [])];
}

export const launcherUnreachable = (kernelId: string, action: string): GatewayError =>
  new GatewayError(409, 'Conflict', `Kernel ${kernelId} cannot ${action} now: its launcher is not connected (the driver is starting or reconnecting). Try again in a moment.`);

export const restartBeforeReady = (kernelId: string): GatewayError =>
  new GatewayError(409, 'Conflict', `Kernel ${kernelId} is still starting (Spark is not ready): nothing has run in it yet; restart it once it is idle.`);

export const restartUnconfirmed = (timeoutMs: number, state: string): GatewayError =>
  new GatewayError(504, 'Gateway Timeout', `The kernel did not confirm its restart (no answer within ${timeoutMs / 1000} s, or its launcher disconnected); it is ${state}.`);

export const restartFailed = (error: unknown): GatewayError =>
  new GatewayError(500, 'Restart failed', `The kernel could not reset its namespace: ${typeof error === 'string' ? error : 'unknown error'}`);

export const interruptUnconfirmed = (timeoutMs: number): GatewayError =>
  new GatewayError(504, 'Gateway Timeout', `The kernel's launcher did not confirm the interrupt (no answer within ${timeoutMs / 1000} s, or it disconnected): it may not have reached the kernel.`);

export const endedWhileInterrupted = (kernelId: string): GatewayError =>
  new GatewayError(404, 'Not Found', `Kernel ended while being interrupted: ${kernelId}`);
