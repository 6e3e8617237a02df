/**
 * How the CLI reports a failure: one line on stderr in one style, `leasehold: <why> [CODE]`, and
 * one exit code per kind (the table in docs/configuration.md, CLI). CODE is the error's stable
 * code, USAGE for the command line itself (commander's parse errors, a malformed flag value).
 */
import { CommanderError, InvalidArgumentError } from 'commander';
import { isLeaseholdError, ValidationError } from '../core/index.js';
import { terminalSafe } from './format.js';

export const EXIT = {
  ok: 0,
  /** the database or anything unexpected: the command may have done part of its work */
  failure: 1,
  /** bad input or usage: nothing was written */
  badInput: 2,
  /** the job or schedule named does not exist */
  notFound: 3,
  /** the job's state does not allow it (cancel a finished job) */
  invalidState: 4,
  /** a second SIGTERM/SIGINT during a graceful stop */
  secondSignal: 130,
} as const;

const NOT_FOUND = new Set(['JOB_NOT_FOUND', 'SCHEDULE_NOT_FOUND']);

/** The exit code for an error the command threw. */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.badInput;
  if (e instanceof InvalidArgumentError || e instanceof ValidationError) return EXIT.badInput;
  if (isLeaseholdError(e) && NOT_FOUND.has(e.code)) return EXIT.notFound;
  if (isLeaseholdError(e) && e.code === 'INVALID_STATE') return EXIT.invalidState;
  return EXIT.failure;
}

/** One error line, newline included. */
export function errorLine(message: string, code: string): string {
  // a message may quote stored text (a job's type or error): no control characters reach the terminal
  const oneLine = terminalSafe(message.replace(/\s*\n\s*/g, ' ').trim());
  return `leasehold: ${oneLine} [${code}]\n`;
}

/** Commander's own messages ("error: unknown option '--x'") in our style. */
export function usageLine(commanderMessage: string): string {
  return errorLine(commanderMessage.replace(/^error: /, ''), 'USAGE');
}

/** The line for an error the command threw (commander has printed its own already). */
export function describeError(e: unknown): string {
  if (e instanceof InvalidArgumentError) return usageLine(e.message);
  const msg = e instanceof Error ? e.message : String(e);
  if (isLeaseholdError(e) && e.code !== 'STORAGE') return errorLine(msg, e.code);
  // An unmigrated database fails on its first query; say what to do about it.
  const hint = /no such table|relation .* does not exist|Table .* doesn't exist/i.test(msg) ? ' (run `leasehold migrate` first)' : '';
  return errorLine(`${msg}${hint}`, isLeaseholdError(e) ? e.code : 'ERROR');
}
