// Who may use which Connect session: the key that started it, and nobody else, admins included
// (a session holds its owner's temp views, configs, cached data and artifacts). With
// authentication off a session belongs to its client session id alone. Decided before anything
// is done, so a refused call has no side effect.
import { GrpcRefusal, GrpcStatus } from './grpc-status.js';

/** The caller of a call: its key's id (null with authentication off) and the key itself (sent on to the API). */
export interface ConnectCaller { id: string | null; key: string | undefined }

export interface OwnedSession { owner: string | null; template: string | undefined }

/** Why `caller` may not use `session` (named by template `template`), or undefined when it may. */
export function sessionRefusal(caller: ConnectCaller, sessionId: string, session: OwnedSession, template: string | undefined): GrpcRefusal | undefined {
  if (session.owner !== caller.id) {
    return new GrpcRefusal(GrpcStatus.PERMISSION_DENIED, `Spark Connect session ${sessionId} belongs to another API key: a key reaches only the sessions it started`);
  }
  if (template !== undefined && template !== session.template) {
    return new GrpcRefusal(GrpcStatus.INVALID_ARGUMENT, `Spark Connect session ${sessionId} runs template ${session.template ?? '(none)'}, not ${template}: start a new session for another template`);
  }
  return undefined;
}
