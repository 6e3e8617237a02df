/**
 * Model-based test of the job state machine: fast-check interleaves enqueue, claim, heartbeat,
 * finish (success, retryable and permanent failure, timeout, snooze, cancel, hand-back), stale
 * rescues, sweeps, operator cancel and retry, worker stops and jumps of the database's clock,
 * and after every step each stored job must equal the reference model (model.ts): its status,
 * attempts, run_at, lease and token, finished_at and last error; at the end, its attempts.
 * The clock is the database's own, set by the test (model-storages.ts), so every run is
 * deterministic: a failure prints its commands, seed, path and replayPath, and
 * LEASEHOLD_MODEL_KINDS=<kind> LEASEHOLD_MODEL_SEED=<seed> LEASEHOLD_MODEL_PATH=<path>
 * LEASEHOLD_MODEL_REPLAY=<replayPath> replays it. LEASEHOLD_MODEL_RUNS sets the runs per storage.
 */
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { Model, Real } from './model.js';
import { compareHistories } from './model.js';
import { commandsArb } from './model-arbitraries.js';
import type { ClockedDatabase } from './model-storages.js';
import { clockedDatabase } from './model-storages.js';
import { STORAGE_KINDS, describeEachKind } from './support.js';

const START = Date.UTC(2030, 0, 1);
const env = process.env;

const kinds = env.LEASEHOLD_MODEL_KINDS ? STORAGE_KINDS.filter((k) => env.LEASEHOLD_MODEL_KINDS?.split(',').includes(k)) : STORAGE_KINDS;

await describeEachKind('the job state machine against its model', kinds, (kind) => {
  // a server round trip per call: fewer runs there
  const numRuns = Number(env.LEASEHOLD_MODEL_RUNS ?? (kind === 'memory' || kind === 'sqlite' ? 150 : 20));

  let db: ClockedDatabase;
  before(async () => {
    db = await clockedDatabase(kind);
  });
  after(() => db.close());

  test(`${numRuns} random sequences of up to 80 commands`, { timeout: 480_000 }, async () => {
    const property = fc.asyncProperty(commandsArb(80, env.LEASEHOLD_MODEL_REPLAY), async (cmds) => {
      const { storage, setNow } = await db.fresh(START);
      const model: Model = { now: START, jobs: [] };
      const real: Real = { storage, setNow, tokens: [] };
      await fc.asyncModelRun(() => ({ model, real }), cmds);
      await compareHistories(model, real);
    });
    const replay = env.LEASEHOLD_MODEL_SEED === undefined ? {} : { seed: Number(env.LEASEHOLD_MODEL_SEED), path: env.LEASEHOLD_MODEL_PATH };
    await fc.assert(property, { numRuns, ...replay });
  });
});
