/** leasehold/memory: the in-memory Storage, for unit tests (one process, no persistence). */
export { MemoryStorage, memoryStorage } from './memory-storage.js';
export type { MemoryStorageOptions } from './memory-storage.js';
