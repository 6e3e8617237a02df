import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { ValidationError } from './errors.js';
import { checkBulkBatch, checkOperator, nextAfter, rangeIsEmpty, retryRefusal } from './operator.js';
import type { BulkBatch } from './storage-events.js';

const OK: BulkBatch = { action: 'retry', filter: {}, afterId: null, throughId: '9', limit: 3, actor: 'api', bulkId: 'b-1' };

describe('operator checks', () => {
  it('checkOperator: no actor records nothing; a source needs an actor; text is printable and bounded', () => {
    assert.equal(checkOperator({}), null);
    assert.deepEqual(checkOperator({ actor: 'cli:a@b' }), { actor: 'cli:a@b', source: null });
    assert.deepEqual(checkOperator({ actor: 'x'.repeat(200), source: '::1' }), { actor: 'x'.repeat(200), source: '::1' });
    for (const bad of [{ source: 'h' }, { actor: '' }, { actor: 'x'.repeat(201) }, { actor: 'a\u009bb' }, { actor: 'a', source: '\u007f' }, { actor: 1 }]) {
      assert.throws(() => checkOperator(bad), ValidationError, JSON.stringify(bad));
    }
  });

  it('checkBulkBatch: the action\'s statuses narrowed by the filter; a range from the first job starts after 0', () => {
    assert.deepEqual(checkBulkBatch(OK).statuses, ['queued', 'failed', 'dead', 'cancelled']);
    assert.deepEqual(checkBulkBatch({ ...OK, action: 'delete', filter: { status: 'succeeded' } }).statuses, ['succeeded']);
    const none = checkBulkBatch({ ...OK, action: 'cancel', filter: { status: 'dead' } });
    assert.deepEqual([none.statuses, rangeIsEmpty(none)], [[], true]);
    assert.equal(checkBulkBatch(OK).afterId, '0');
    assert.equal(rangeIsEmpty(checkBulkBatch({ ...OK, afterId: '9' })), true);
    assert.equal(rangeIsEmpty(checkBulkBatch({ ...OK, afterId: '8' })), false);
  });

  it('nextAfter: a full batch resumes after its last job, a short one ends the range', () => {
    const b = checkBulkBatch(OK);
    assert.equal(nextAfter(b, 3, '7'), '7');
    assert.equal(nextAfter(b, 2, '7'), '9');
    assert.equal(nextAfter(b, 0, null), '9');
  });
});

test('retryRefusal: a job waiting on parents, or a batch member whose ending was counted; nothing else', () => {
  assert.match(retryRefusal({ status: 'cancelled', pendingParents: 2 }) ?? '', /waits for 2 parent job\(s\) that have not succeeded/);
  assert.match(retryRefusal({ status: 'dead', batchId: '7' }) ?? '', /batch 7 has counted how it ended/);
  assert.equal(retryRefusal({ status: 'failed', batchId: '7' }), null, 'a failed member was not counted');
  assert.equal(retryRefusal({ status: 'dead', pendingParents: 0 }), null, 'a released child');
  assert.equal(retryRefusal({ status: 'dead' }), null);
});
