import { createRequire } from 'node:module';

// src/runtime and dist/runtime are both two levels below the package root.
/** leasehold's own version, recorded with each registered worker. */
export const VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
