/** Held locks and semaphore slots (GET /api/locks). */
import type { Area, Kit } from '../context.js';
import { HttpError } from '../context.js';
import { locksLive, locksPage } from '../pages/locks.js';

async function load({ client }: Kit) {
  if (typeof client.listLocks !== 'function') throw new HttpError(404, 'This client cannot list locks.');
  return client.listLocks();
}

export const locks: Area = (app, kit) => {
  app.get(kit.path('/locks'), async (c) => kit.render(c, locksPage(kit.page(c), await load(kit), Date.now())));
  app.get(kit.path('/api/locks'), async (c) => kit.json(c, locksLive(await load(kit), Date.now())));
};
