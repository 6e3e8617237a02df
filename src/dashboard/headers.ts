/**
 * The security headers every response carries, errors and 404s included. The CSP lets the page
 * load only the dashboard's own stylesheet and script and talk only to itself; Trusted Types
 * with no policy means no HTML string can reach the DOM even from our own script.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';

export const securityHeaders: MiddlewareHandler = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
    requireTrustedTypesFor: ["'script'"],
    trustedTypes: ["'none'"],
  },
  xFrameOptions: 'DENY',
  referrerPolicy: 'same-origin',
  crossOriginOpenerPolicy: 'same-origin',
  crossOriginResourcePolicy: 'same-origin',
  // the dashboard is plain HTTP on loopback unless a proxy terminates TLS, which sets HSTS itself
  strictTransportSecurity: false,
});

/** The headers, and no-store unless the response chose its own caching (the hashed assets). */
export const withHeaders: MiddlewareHandler = async (c, next) => {
  await securityHeaders(c, next);
  if (!c.res.headers.has('Cache-Control')) c.res.headers.set('Cache-Control', 'no-store');
};

/** For a response made outside the middleware (a 404 outside the base path): the same headers. */
export async function decorate(c: Context, make: () => Response | Promise<Response>): Promise<Response> {
  await withHeaders(c, async () => {
    c.res = await make();
  });
  return c.res;
}
