/**
 * The dashboard's security primitives, with no HTTP framework in them: which hosts it answers
 * for, constant-time token checks, the signed session cookie, and CSRF tokens bound to that
 * session.
 *
 * Model: a random session id lives in an HttpOnly, SameSite=Strict cookie. The CSRF token in
 * every form is HMAC(key, "csrf:" + sid); a cross-site page can neither read the cookie nor
 * compute the HMAC. With a dashboard token, sign-in sets a second cookie HMAC(key, "auth:" +
 * sid + expiry), bound to that session and expiring; it counts only while the session is in
 * the server's session store (sessions.ts), so sign-out ends it for good. The key is derived
 * from the token, or random per process without a token.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'leasehold_sid';
export const AUTH_COOKIE = 'leasehold_auth';
/** how long a login lasts */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** localhost, 127.0.0.0/8, ::1 (with or without brackets). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1' || /^127(\.\d{1,3}){3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** The hostname part of a Host header value (`example.com:8080`, `[::1]:80`). */
export function hostnameOf(hostHeader: string): string {
  const m = /^\[([^\]]*)\](?::\d+)?$/.exec(hostHeader);
  if (m) return m[1] ?? '';
  const i = hostHeader.lastIndexOf(':');
  return i >= 0 && hostHeader.indexOf(':') === i ? hostHeader.slice(0, i) : hostHeader;
}

const ANY_INTERFACE = new Set(['', '0.0.0.0', '::', '[::]']);

/**
 * Which Host names a dashboard with a token answers for (a rebinding attacker's name is not
 * one): loopback, the interface it listens on when that is a name or address of its own, the
 * hosts of `allowedOrigins`, and `allowedHosts`. Throws TypeError for an entry that is not a
 * host name.
 */
export function hostAllowlist(opts: { host?: string | undefined; allowedOrigins?: readonly string[] | undefined; allowedHosts?: readonly string[] | undefined }): (hostname: string) => boolean {
  const names = new Set<string>();
  const add = (h: string) => names.add(h.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1'));
  if (opts.host !== undefined && !ANY_INTERFACE.has(opts.host.trim())) add(opts.host);
  for (const o of opts.allowedOrigins ?? []) add(new URL(o).hostname);
  for (const h of opts.allowedHosts ?? []) {
    if (typeof h !== 'string' || h.trim() === '' || /[/\\@\s]/.test(h)) throw new TypeError(`allowedHosts entries are host names like ops.example.com, got ${JSON.stringify(h)}`);
    add(hostnameOf(h.trim()));
  }
  return (hostname) => isLoopbackHost(hostname) || names.has(hostname.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1'));
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Hex SHA-256, for the bearer check's constant-time comparison. */
export const sha256 = (s: string): string => digest(s).toString('hex');

/** Constant-time string equality (hashing first, so lengths leak nothing either). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** What the dashboard accepts as a token: long enough to resist guessing, and sendable as a bearer token (RFC 6750). */
export function checkTokenStrength(token: string): void {
  if (typeof token !== 'string' || token.length < 16 || !/^[A-Za-z0-9._~+/-]+=*$/.test(token)) {
    throw new TypeError('dashboard token must be at least 16 characters of letters, digits and ._~+/- (try: openssl rand -hex 24)');
  }
}

export class Secrets {
  readonly #key: Buffer;
  readonly #token: string | undefined;

  constructor(token: string | undefined) {
    this.#token = token;
    this.#key = token === undefined ? randomBytes(32) : createHmac('sha256', token).update('leasehold-dashboard-v1').digest();
  }

  get tokenRequired(): boolean {
    return this.#token !== undefined;
  }

  checkToken(candidate: string): boolean {
    return this.#token !== undefined && safeEqual(candidate, this.#token);
  }

  #mac(data: string): string {
    return createHmac('sha256', this.#key).update(data).digest('base64url');
  }

  newSessionId(): string {
    return randomBytes(24).toString('base64url');
  }

  /** A session id as it must look (we only ever mint 24 random bytes, base64url). */
  static validSessionId(sid: string | undefined): sid is string {
    return typeof sid === 'string' && /^[A-Za-z0-9_-]{32}$/.test(sid);
  }

  csrfFor(sid: string): string {
    return this.#mac(`csrf:${sid}`);
  }

  checkCsrf(sid: string, candidate: unknown): boolean {
    return typeof candidate === 'string' && safeEqual(candidate, this.csrfFor(sid));
  }

  /** The auth cookie value for a logged-in session: `expiresAtMs.mac`. */
  authFor(sid: string, nowMs: number): string {
    const exp = nowMs + SESSION_TTL_MS;
    return `${exp}.${this.#mac(`auth:${sid}:${exp}`)}`;
  }

  checkAuth(sid: string, value: string | undefined, nowMs: number): boolean {
    if (!this.tokenRequired || typeof value !== 'string') return false;
    const m = /^(\d{1,16})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (!m) return false;
    const exp = Number(m[1]);
    return exp > nowMs && safeEqual(m[2] ?? '', this.#mac(`auth:${sid}:${exp}`));
  }
}
