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

export function iopub(msgType: string, content: Record<string, unknown>, parent: Record<string, unknown> = {}): JupyterMessage {
  const msgId = randomUUID();
  return {
    header: { msg_id: msgId, msg_type: msgType, session: 'gateway', username: 'gateway', date: new Date().toISOString(), version: '5.3' },
    parent_header: parent, metadata: {}, content, buffers: [], channel: 'iopub', msg_id: msgId, msg_type: msgType,
  };
}

export const statusMessage = (state: string) => iopub('status', { execution_state: state });
export const stderrMessage = (text: string) => iopub('stream', { name: 'stderr', text });

/**
 * A client's frame (decoded text: browsers' binary frames reach us as text that is not UTF-8,
 * and decoding replaced the bad bytes), or undefined when it is not a Jupyter message (garbage
 * is ignored, not fatal).
 */
export function parseClientFrame(text: string): JupyterMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const message = value as Partial<JupyterMessage>;
  if (!message || typeof message !== 'object' || typeof message.channel !== 'string'
    || !message.header || typeof message.header !== 'object' || typeof message.header.msg_id !== 'string') return undefined;
  if (!['shell', 'control', 'stdin'].includes(message.channel)) return undefined;
  return message as JupyterMessage;
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
