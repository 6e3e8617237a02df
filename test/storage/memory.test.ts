/** The in-memory adapter against the shared storage conformance suite. */
import { memoryStorage } from '../../src/storage/memory/index.js';
import { runStorageConformance } from '../conformance/index.js';

runStorageConformance({
  name: 'memory',
  async create() {
    const storage = memoryStorage();
    await storage.migrate();
    return {
      storage,
      // one process, one instance: "another connection" is the same object
      connectAnother: async () => storage,
      cleanup: () => storage.close(),
    };
  },
});
