/**
 * The random command sequences of the model-based test: every command of model-commands.ts,
 * the ones that move jobs along more often than the rest, with arguments near the edges that
 * matter — clock jumps of exactly a lease or a delay, and 1 ms either side.
 */
import fc from 'fast-check';
import type { Command } from './model-commands.js';
import { Admin, Claim, Enqueue, Finish, Heartbeat, Jump, StaleRescue, Stop, Sweep, ZombieFinish, ZombieHeartbeat } from './model-commands.js';
import type { Ending } from './model.js';
import { TYPES, WORKERS } from './model.js';

const pick = fc.nat({ max: 5 });
const back = fc.nat({ max: 2 });
const typeSets = fc.constantFrom<readonly string[]>(['a'], ['b'], TYPES, TYPES);
const random = fc.integer({ min: 0, max: 99 }).map((n) => n / 100);
const leaseMs = fc.constantFrom(1_000, 3_000);
const ending = fc.constantFrom<Ending>('success', 'error', 'error', 'timeout', 'permanent', 'snooze', 'cancel', 'shutdown');

/** Sequences of up to `maxCommands` commands; `replayPath` replays a counterexample's. */
export function commandsArb(maxCommands: number, replayPath?: string): fc.Arbitrary<Iterable<Command>> {
  const enqueue = fc
    .tuple(fc.constantFrom(...TYPES), fc.integer({ min: 0, max: 2 }), fc.constantFrom(0, 0, 1_000, 1_500), fc.integer({ min: 1, max: 3 }), fc.constantFrom(null, null, 'k1', 'k2'))
    .map((a) => new Enqueue(...a));
  const claim = fc.tuple(fc.constantFrom(...WORKERS), typeSets, fc.integer({ min: 1, max: 3 }), leaseMs).map((a) => new Claim(...a));
  const heartbeat = fc.tuple(pick, back, fc.boolean(), leaseMs).map((a) => new Heartbeat(...a));
  const finish = fc.tuple(pick, back, fc.boolean(), ending, random).map((a) => new Finish(...a));
  const zombie = fc.oneof(
    fc.tuple(pick, back, fc.constant(true), leaseMs).map((a) => new ZombieHeartbeat(...a)),
    fc.tuple(pick, back, fc.constant(true), ending, random).map((a) => new ZombieFinish(...a)),
  );
  const jump = fc.constantFrom(1, 499, 500, 501, 999, 1_000, 1_001, 1_500, 2_999, 3_000, 3_001, 8_000).map((ms) => new Jump(ms));
  return fc.commands(
    [
      enqueue, enqueue, claim, claim, claim, heartbeat, heartbeat, finish, finish, zombie, zombie, zombie, jump, jump,
      fc.tuple(pick, back, fc.boolean()).map((a) => new StaleRescue(...a)),
      fc.tuple(typeSets, fc.constantFrom<'retry' | 'fail'>('retry', 'retry', 'fail'), random).map((a) => new Sweep(...a)),
      fc.constantFrom(...WORKERS).map((w) => new Stop(w)),
      fc.tuple(fc.constantFrom<'cancel' | 'retry'>('cancel', 'retry'), pick).map((a) => new Admin(...a)),
    ],
    { maxCommands, size: 'max', ...(replayPath === undefined ? {} : { replayPath }) },
  );
}
