/**
 * A reusable "something changed" signal: `wait(ms)` resolves on the next `wake()` or after
 * `ms`, whichever comes first. Lets loops sleep without polling tightly and without missing
 * a wake-up that arrives while they work (a wake with no waiter is remembered once).
 */
export class Wakeup {
  #waiters: (() => void)[] = [];
  #pending = false;

  wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    if (w.length === 0) this.#pending = true;
    for (const r of w) r();
  }

  wait(ms: number): Promise<void> {
    if (this.#pending || ms <= 0) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.#waiters = this.#waiters.filter((w) => w !== done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.#waiters.push(done);
    });
  }
}
