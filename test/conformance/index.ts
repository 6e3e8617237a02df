/**
 * The storage conformance suite: ONE set of tests every adapter (memory, sqlite, postgres,
 * mysql) runs, pinning the semantics written in the header of src/core/storage.ts.
 *
 * Usage, from an adapter's test file:
 *
 *   runStorageConformance({ name: 'sqlite', create: async () => ({ storage, connectAnother, cleanup }) });
 *
 * Each describe block calls `create()` once (in `before`) and `cleanup()` once (in `after`);
 * tests inside a block keep apart by using unique job types. `cleanup()` must close every
 * Storage the harness handed out, including those from `connectAnother()`: the suite never
 * closes them itself (for the memory adapter they are all one instance).
 */
import { describe } from 'node:test';
import type { Storage } from '../../src/core/storage.js';
import { adminTests } from './admin.js';
import { chartTests } from './charts.js';
import { countTests } from './counts.js';
import { dueCountTests } from './due-counts.js';
import { rollUpTests } from './rollups.js';
import { bulkTests } from './bulk.js';
import { effectTests } from './effects.js';
import { eventTests } from './events.js';
import { finishTests } from './finish.js';
import { flowTests } from './flow.js';
import { claimTests } from './jobs-claim.js';
import { insertTests } from './jobs-insert.js';
import { listingTests } from './listing.js';
import { pruneTests } from './prune.js';
import { queueFlowTests } from './queue-flow.js';
import { lockTests } from './locks.js';
import { observeTests } from './observe.js';
import { raceTests } from './races.js';
import { resultTests } from './results.js';
import { workflowTests } from './workflows.js';
import { batchTests } from './batches.js';
import { workflowGraphTests } from './workflow-graph.js';
import { operatorGuardTests } from './operator-guards.js';
import { scheduleTests } from './schedules.js';
import { searchTests } from './search.js';
import { sweepTests } from './sweep.js';
import { uniqueTests } from './unique.js';
import { workerTests } from './workers.js';

export interface ConformanceHarness {
  name: string;
  /** a fresh, migrated, empty database; `connectAnother` opens a second Storage on the SAME database (another connection/instance), for race tests */
  create(): Promise<{ storage: Storage; connectAnother(): Promise<Storage>; cleanup(): Promise<void> }>;
}

export function runStorageConformance(h: ConformanceHarness): void {
  describe(`storage conformance: ${h.name}`, () => {
    insertTests(h);
    claimTests(h);
    finishTests(h);
    sweepTests(h);
    adminTests(h);
    eventTests(h);
    bulkTests(h);
    listingTests(h);
    pruneTests(h);
    effectTests(h);
    workerTests(h);
    raceTests(h);
    scheduleTests(h);
    lockTests(h);
    observeTests(h);
    flowTests(h);
    queueFlowTests(h);
    uniqueTests(h);
    searchTests(h);
    countTests(h);
    dueCountTests(h);
    chartTests(h);
    rollUpTests(h);
    resultTests(h);
    workflowTests(h);
    batchTests(h);
    workflowGraphTests(h);
    operatorGuardTests(h);
  });
}
