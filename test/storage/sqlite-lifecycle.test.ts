/**
 * SQLite storage opened, used and ended from a worker thread and from many short processes, on
 * both drivers: each must exit cleanly (code 0, no signal) whether or not it closed the storage.
 * A native module whose objects outlive the Node environment's teardown aborts here.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Worker as Thread } from 'node:worker_threads';
import { SQLITE_DRIVERS } from '../../src/storage/sqlite/index.js';
import { tempFiles } from './sqlite-support.js';

const fixture = path.join(import.meta.dirname, 'fixtures', 'sqlite-user.ts');
const tempFile = tempFiles();

function runProcess(file: string, driver: string, ending: string): Promise<{ code: number | null; signal: string | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, file, driver, ending], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, out, err }));
  });
}

function runThread(file: string, driver: string, ending: string): Promise<{ code: number; messages: string[] }> {
  return new Promise((resolve, reject) => {
    const messages: string[] = [];
    // tsx's loader is registered inside the thread, which then imports the TypeScript fixture
    const boot = `import('tsx/esm/api').then(({ tsImport }) => tsImport(${JSON.stringify(fixture)}, ${JSON.stringify(import.meta.url)}))`;
    const t = new Thread(boot, { eval: true, workerData: { file, driver, ending } });
    t.on('message', (m: string) => messages.push(m));
    t.once('error', reject);
    t.once('exit', (code) => resolve({ code, messages }));
  });
}

for (const driver of SQLITE_DRIVERS) {
  describe(`sqlite lifecycle (${driver})`, () => {
    for (const ending of ['close', 'leave']) {
      it(`a worker thread that uses the storage and ends (${ending === 'close' ? 'closed' : 'left open'}) exits with 0`, async () => {
        const file = tempFile();
        const first = await runThread(file, driver, ending);
        const second = await runThread(file, driver, ending);
        assert.deepEqual([first, second].map((r) => r.code), [0, 0]);
        assert.deepEqual([...first.messages, ...second.messages], ['{"processed":20}', '{"processed":20}']);
      });
    }

    it('eight short processes on one file, half closing and half not, all exit with 0 and run every job once', async () => {
      const file = tempFile();
      const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => runProcess(file, driver, i % 2 ? 'leave' : 'close')));
      for (const r of runs) assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null }, r.err);
      const processed = runs.reduce((n, r) => n + (JSON.parse(r.out) as { processed: number }).processed, 0);
      assert.equal(processed, 160);
    });
  });
}
