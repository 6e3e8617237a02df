/**
 * Progress lines of a bench run, each stamped with the time of day. They go to stderr so that
 * stdout carries only the result tables.
 */
export const log = (s: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s}\n`);
