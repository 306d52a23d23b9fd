// Dashboard sessions: a signed, expiring cookie (an HS256 JWT) that names the API key it was
// issued for, by id. Nothing is kept in memory, so any replica that shares the secret accepts
// it and a restart signs nobody out. The key store is consulted on every use (byId), so
// revoking the key ends its sessions at once, and a changed role counts at once too.
import type { FastifyRequest } from 'fastify';
import jwt from 'jsonwebtoken';
import type { ApiKeyIdentity } from '../submit-api/auth/key-store.js';

export const SESSION_COOKIE = 'ss_session';
const ISSUER = 'submission-service/dashboard';
const DEFAULT_TTL_MS = 12 * 60 * 60 * 1000;

/** Looks a key up by id: the key stores (FileKeyStore, SecretKeyStore) implement it. */
export interface KeyLookup {
  byId(id: string): ApiKeyIdentity | undefined;
}

export interface SessionOptions {
  /** The HMAC secret (at least 32 bytes): session-secret.ts reads or creates it. */
  secret: Buffer;
  store: KeyLookup;
  ttlMs?: number;
}

/** The value of one cookie in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export class Sessions {
  readonly ttlMs: number;

  constructor(private readonly options: SessionOptions) {
    if (options.secret.length < 32) throw new Error('the session secret must have at least 32 bytes');
    this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
  }

  /** A session token for key `keyId`. */
  issue(keyId: string): string {
    return jwt.sign({}, this.options.secret, {
      algorithm: 'HS256', subject: keyId, issuer: ISSUER, expiresIn: Math.floor(this.ttlMs / 1000),
    });
  }

  /** The identity behind a token: valid signature, not expired, and its key still active. */
  identityOf(token: string | undefined): ApiKeyIdentity | undefined {
    if (!token) return undefined;
    let subject: string | undefined;
    try {
      // The algorithm is pinned: a token can't pick "none" or another key type.
      const claims = jwt.verify(token, this.options.secret, { algorithms: ['HS256'], issuer: ISSUER });
      // A grant (below) is for one audience only and never a session.
      subject = typeof claims === 'object' && claims.aud === undefined ? claims.sub : undefined;
    } catch {
      return undefined; // bad signature, expired, malformed: simply no session
    }
    return subject ? this.options.store.byId(subject) : undefined;
  }

  /** The identity behind the request's session cookie: the auth plugin's sessionVerifier. */
  readonly verify = (request: FastifyRequest): ApiKeyIdentity | undefined =>
    this.identityOf(cookieValue(request.headers.cookie, SESSION_COOKIE));

  /**
   * A narrower token signed with the same secret: for key `keyId`, accepted only by `audience`
   * for `scope` (e.g. one application's Spark UI), for ttlMs. Never accepted as a session.
   */
  grant(keyId: string, audience: string, scope: string, ttlMs: number): string {
    return jwt.sign({ scope }, this.options.secret, {
      algorithm: 'HS256', subject: keyId, issuer: ISSUER, audience, expiresIn: Math.max(1, Math.floor(ttlMs / 1000)),
    });
  }

  /** The identity behind a grant of exactly this audience and scope whose key is still active. */
  identityOfGrant(token: string | undefined, audience: string, scope: string): ApiKeyIdentity | undefined {
    if (!token) return undefined;
    try {
      const claims = jwt.verify(token, this.options.secret, { algorithms: ['HS256'], issuer: ISSUER, audience });
      if (typeof claims !== 'object' || claims.scope !== scope || !claims.sub) return undefined;
      return this.options.store.byId(claims.sub);
    } catch {
      return undefined;
    }
  }

  /** Set-Cookie for a new session; Secure when the request came over TLS (see trustProxy). */
  cookie(token: string, secure: boolean): string {
    return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(this.ttlMs / 1000)}${secure ? '; Secure' : ''}`;
  }

  /** Set-Cookie that removes the session from the browser. */
  clearCookie(secure: boolean): string {
    return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
  }
}
