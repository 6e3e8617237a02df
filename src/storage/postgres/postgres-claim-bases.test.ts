import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClaimBases } from './postgres-claim-bases.js';

describe('ClaimBases', () => {
  it('names the one worker whose claims made every token', () => {
    const b = new ClaimBases();
    b.add('AAA', 'w1');
    b.add('BBB', 'w1');
    b.add('CCC', 'w2');
    assert.equal(b.workerOf(['AAA.1', 'AAA.2', 'BBB.3', 'AAA.4']), 'w1');
    assert.equal(b.workerOf(['CCC.9']), 'w2');
    assert.equal(b.workerOf(['AAA.1', 'CCC.2']), undefined, 'two workers');
    assert.equal(b.workerOf(['AAA.1', 'DDD.2']), undefined, 'a claim made elsewhere');
    assert.equal(b.workerOf([]), undefined);
  });

  it('reads the base up to the first dot only, and refuses tokens without one', () => {
    const b = new ClaimBases();
    b.add('AAA', 'w1');
    assert.equal(b.workerOf(['AAA.1', 'AAAB.2']), undefined, 'a base that starts like the previous one');
    assert.equal(b.workerOf(['AAA.1', 'AA.2']), undefined);
    assert.equal(b.workerOf(['0123456789abcdef0123456789abcdef']), undefined, "the previous version's md5 token");
    assert.equal(b.workerOf(['.1']), undefined);
  });

  it('forgets the oldest claims past 4,096', () => {
    const b = new ClaimBases();
    for (let i = 0; i < 4097; i++) b.add(`b${i}`, 'w');
    assert.equal(b.workerOf(['b0.1']), undefined);
    assert.equal(b.workerOf(['b1.1', 'b4096.2']), 'w');
  });
});
