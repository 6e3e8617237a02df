/**
 * The stylesheet and the script as served files. Each name carries a hash of its content, so a
 * browser may keep it for a year and a new version is a new URL.
 */
import { createHash } from 'node:crypto';
import { CLIENT_JS } from './client.js';
import { CSS } from './style.js';

export interface Asset {
  /** under the dashboard's base path */
  path: string;
  type: string;
  body: string;
}

function asset(name: string, ext: string, type: string, body: string): Asset {
  const hash = createHash('sha256').update(body, 'utf8').digest('hex').slice(0, 12);
  return { path: `/assets/${name}-${hash}.${ext}`, type, body };
}

export const STYLE = asset('dashboard', 'css', 'text/css; charset=utf-8', CSS);
export const SCRIPT = asset('dashboard', 'js', 'text/javascript; charset=utf-8', CLIENT_JS);
export const ASSETS: readonly Asset[] = [STYLE, SCRIPT];
