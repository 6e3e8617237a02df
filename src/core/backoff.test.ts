import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { Backoff, retrying } from './backoff.js';

const policy = { kind: 'exponential', baseMs: 10, factor: 2, maxMs: 50, jitter: 'none' } as const;

describe('Backoff', () => {
  it('doubles from the base up to the cap, and starts over after reset', () => {
    const b = new Backoff(policy);
    assert.deepEqual([b.next(), b.next(), b.next(), b.next()], [10, 20, 40, 50]);
    assert.equal(b.failures, 4);
    b.reset();
    assert.equal(b.next(), 10);
  });

  it('jitters inside the policy band with the injected random', () => {
    const b = new Backoff({ ...policy, jitter: 'full' }, () => 0);
    assert.equal(b.next(), 0);
  });
});

describe('retrying', () => {
  it('tries again after each error, waiting the backoff, until fn resolves', async () => {
    const waits: number[] = [];
    const seen: number[] = [];
    const out = await retrying(
      async (n) => {
        seen.push(n);
        if (n < 3) throw new Error(`try ${n}`);
        return 'ok';
      },
      { policy, attempts: 5, sleep: async (ms) => void waits.push(ms) },
    );
    assert.equal(out, 'ok');
    assert.deepEqual(seen, [1, 2, 3]);
    assert.deepEqual(waits, [10, 20]);
  });

  it('throws the last error once the tries run out, and at once when retryIf says no', async () => {
    let calls = 0;
    const fail = async (): Promise<never> => {
      calls += 1;
      throw new Error(`fail ${calls}`);
    };
    await assert.rejects(retrying(fail, { policy, attempts: 3, sleep: async () => {} }), /fail 3/);
    calls = 0;
    await assert.rejects(retrying(fail, { policy, attempts: 3, retryIf: () => false, sleep: async () => {} }), /fail 1/);
  });

  it('tells onRetry the error, the attempt and the wait before sleeping', async () => {
    const retries: [string, number, number][] = [];
    await retrying(
      async (n) => {
        if (n === 1) throw new Error('x');
      },
      { policy, attempts: 2, onRetry: (e, n, ms) => retries.push([(e as Error).message, n, ms]), sleep: async () => {} },
    );
    assert.deepEqual(retries, [['x', 1, 10]]);
  });
});

describe('retrying, alone in a process', () => {
  it('holds the process open while it waits to try again (a CLI migrating at start must not exit mid-retry)', () => {
    const script = `import { retrying } from ${JSON.stringify(new URL('./backoff.ts', import.meta.url).href)};
      let tries = 0;
      const policy = { kind: 'exponential', baseMs: 50, factor: 1, maxMs: 50, jitter: 'none' };
      console.log(await retrying(async () => { if (++tries < 3) throw new Error('not yet'); return 'tried ' + tries; }, { policy, attempts: 5 }));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(out.trim(), 'tried 3');
  });
});
