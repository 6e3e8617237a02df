/**
 * A service's periodic loop: the first tick after a random part of the interval, then one per
 * interval ±20 %, so the same service on many hosts drifts apart instead of firing together.
 * A tick still out when stop() runs arms no other.
 */
export class Ticker {
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(
    private readonly intervalMs: number,
    private readonly random: () => number,
    private readonly tick: () => Promise<unknown>,
  ) {}

  start(): void {
    this.#running = true;
    const loop = async () => {
      if (!this.#running) return;
      await this.tick();
      if (this.#running) this.#timer = setTimeout(loop, this.intervalMs * (0.8 + 0.4 * this.random()));
    };
    this.#timer = setTimeout(loop, this.intervalMs * this.random());
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
  }
}
