import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValidationError } from './errors.js';
import { checkJobFilter, checkJobSearch, foldAscii, globPattern, likePattern } from './search.js';

describe('search patterns', () => {
  it('folds A-Z only; escapes LIKE (! % _) and GLOB (* ? [) specials', () => {
    assert.equal(foldAscii('ÉCOLE Straße ABC'), 'École straße abc');
    assert.equal(likePattern('50%_off!', true), '50!%!_off!!%');
    assert.equal(likePattern('a_b', false), 'a!_b');
    assert.equal(globPattern('k*?[1]', true), 'k[*][?][[]1]*');
  });
});

describe('checkJobFilter', () => {
  it('spells each match out once, folds the text', () => {
    const f = checkJobFilter({ status: 'dead', queuePrefix: 'em', type: 'send', idempotencyKeyPrefix: 'o_', text: 'TimeOut' });
    assert.deepEqual(f, {
      status: 'dead',
      queue: { value: 'em', prefix: true, like: 'em%', glob: 'em*' },
      type: { value: 'send', prefix: false, like: 'send', glob: 'send' },
      idempotencyKey: { value: 'o_', prefix: true, like: 'o!_%', glob: 'o_*' },
      id: null,
      scheduleName: null,
      text: 'timeout',
    });
    assert.deepEqual(checkJobFilter(undefined), { status: null, queue: null, type: null, idempotencyKey: null, id: null, scheduleName: null, text: null });
  });

  it('refuses what cannot match or was mistyped', () => {
    for (const f of [{ id: '01' }, { id: 1 }, { text: 'x'.repeat(201) }, { text: '\ud800' }, { type: 'a', typePrefix: 'a' }, { scheduleName: '' }, { idempotencyKey: 'a\u0000' }, { bogus: 1 }, []]) {
      assert.throws(() => checkJobFilter(f), ValidationError, JSON.stringify(f));
    }
    assert.throws(() => checkJobSearch({ limit: 10, beforeId: '2', afterId: '1' }), ValidationError);
    assert.equal(checkJobSearch({ limit: 10 }).scanLimit, 10_000);
  });
});
