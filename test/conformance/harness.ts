/**
 * What every SQL adapter's conformance harness does with its fresh database: open a Storage on
 * it (migrated), hand out more on the same database for the races, and at the end close them all
 * and drop the database.
 */
import type { Storage } from '../../src/core/storage.js';

export async function harnessDb(open: () => Storage, drop: () => Promise<void>): Promise<{ storage: Storage; connectAnother(): Promise<Storage>; cleanup(): Promise<void> }> {
  const storage = open();
  await storage.migrate();
  const others: Storage[] = [];
  return {
    storage,
    connectAnother: async () => {
      const s = open();
      others.push(s);
      return s;
    },
    cleanup: async () => {
      for (const s of others) await s.close();
      await storage.close();
      await drop();
    },
  };
}
