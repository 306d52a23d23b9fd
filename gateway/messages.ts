// Jupyter messages as the legacy JSON text protocol carries them, and the few the gateway
// writes itself (status while the driver starts, errors it must show in the notebook).
import { randomUUID } from 'node:crypto';

export interface JupyterMessage {
  header: { msg_id: string; msg_type: string; session?: string; [key: string]: unknown };
  parent_header: Record<string, unknown>;
  metadata: Record<string, unknown>;
  content: Record<string, unknown>;
  buffers?: unknown[];
  channel: string;
  msg_id?: string;
  msg_type?: string;
}

/** Messages that do not count as activity for culling (FIELD-NOTES). */
const QUIET = new Set(['status', 'kernel_info_request', 'kernel_info_reply', 'comm_info_request', 'comm_info_reply']);
export const countsAsActivity = (msgType: string) => !QUIET.has(msgType);

function header(msgType: string): JupyterMessage['header'] {
  return { msg_id: randomUUID(), msg_type: msgType, session: 'gateway', username: 'gateway', date: new Date().toISOString(), version: '5.3' };
}

export function iopub(msgType: string, content: Record<string, unknown>, parent: Record<string, unknown> = {}): JupyterMessage {
  const own = header(msgType);
  return { header: own, parent_header: parent, metadata: {}, content, buffers: [], channel: 'iopub', msg_id: own.msg_id, msg_type: msgType };
}

/**
 * The gateway's own statuses (busy while the driver starts, idle when it is ready, restarting,
 * dead) are parented as Kernel Gateway's are when it shows a kernel's state: to the
 * `kernel_info_request` its server sends a kernel on connect and after a restart. A complete
 * header, never `{}`: jupyter_server's activity tracking does not count statuses of
 * kernel_info as work, and clients that match statuses to requests find a request to match.
 */
export const statusMessage = (state: string) => iopub('status', { execution_state: state }, header('kernel_info_request'));
export const stderrMessage = (text: string, parent: Record<string, unknown> = {}) => iopub('stream', { name: 'stderr', text }, parent);

/** The reply to a request the gateway could not take (a full hold, say): `status: error`, on the request's channel. */
export function refusedReply(request: JupyterMessage, evalue: string): JupyterMessage | undefined {
  const type = request.header.msg_type;
  if (!type.endsWith('_request')) return undefined;
  const msgType = `${type.slice(0, -'_request'.length)}_reply`;
  const own = header(msgType);
  return {
    header: own, parent_header: request.header, metadata: {},
    content: { status: 'error', ename: 'GatewayLimit', evalue, traceback: [] },
    buffers: [], channel: request.channel, msg_id: own.msg_id, msg_type: msgType,
  };
}

/**
 * A client's frame (decoded text: browsers' binary frames reach us as text that is not UTF-8,
 * and decoding replaced the bad bytes), or undefined when it is not a Jupyter message (garbage
 * is ignored, not fatal). A frame without `channel` is a `shell` request, as jupyter_server and
 * Kernel Gateway take it (jupyter_client's websocket clients leave it out); `text` is then the
 * message with the channel written in (the launcher routes by it), else the frame as received.
 */
export function parseClientFrame(frame: string): { message: JupyterMessage; text: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(frame);
  } catch {
    return undefined;
  }
  const message = value as Partial<JupyterMessage>;
  if (!message || typeof message !== 'object' || Array.isArray(message)
    || !message.header || typeof message.header !== 'object' || typeof message.header.msg_id !== 'string') return undefined;
  if (message.channel === undefined || message.channel === null) {
    message.channel = 'shell';
    return { message: message as JupyterMessage, text: JSON.stringify(message) };
  }
  if (typeof message.channel !== 'string' || !['shell', 'control', 'stdin'].includes(message.channel)) return undefined;
  return { message: message as JupyterMessage, text: frame };
}

/** What the launcher says about each kernel message, so the message itself is passed on unparsed. */
export interface Routing {
  channel: string;
  msg_type: string;
  /** parent_header.msg_id ('' when none). */
  parent: string;
  /** execution_state of an iopub status, else null. */
  state: string | null;
  /** How many binary buffers the message carries (base64 inside it). */
  buffers: number;
}

/**
 * A kernel message from the launcher: `>` + routing JSON + newline + the Jupyter message as
 * JSON text (gateway/kernel/launcher.py). Undefined when the frame is not one.
 */
export function splitKernelFrame(text: string): { routing: Routing; body: string } | undefined {
  if (text.charCodeAt(0) !== 0x3e /* > */) return undefined;
  const newline = text.indexOf('\n');
  if (newline < 0) return undefined;
  try {
    const routing = JSON.parse(text.slice(1, newline)) as Routing;
    if (typeof routing.channel !== 'string' || typeof routing.msg_type !== 'string') return undefined;
    return { routing, body: text.slice(newline + 1) };
  } catch {
    return undefined;
  }
}
