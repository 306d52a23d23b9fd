// Reading a refusal back out of the apiserver's error. The webhook denies with the
// refusal body as JSON in status.message; the apiserver answers the pod creation with
// that status code and the message prefixed by `admission webhook "<name>" denied the request: `.

const DENIED = 'denied the request: ';

/** The refusal body inside an apiserver error message, or undefined when it carries none. */
export function refusalFromMessage(message: string): Record<string, unknown> | undefined {
  const at = message.indexOf(DENIED);
  const json = at >= 0 ? message.slice(at + DENIED.length) : message;
  try {
    const body = JSON.parse(json) as unknown;
    return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
