/**
 * prom-client counters and histograms whose hot path is a few number bumps on a cell kept per
 * label set. prom-client hashes the label set on every `inc` and `observe`, which a drain of
 * short jobs feels at three per attempt; here a caller keeps the cell of its labels and bumps
 * it. prom-client still owns the names, the registry, merging and the exposition: the cells
 * are read into its format at scrape time.
 */
import { Counter, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

export interface CountCell {
  n: number;
}

export interface ObserveCell {
  observe(value: number): void;
}

/** The cells of one metric, one per label set, made on first use and kept. */
class Cells<C> {
  readonly #cells = new Map<string, { labels: Record<string, string>; cell: C }>();

  constructor(
    private readonly labelNames: readonly string[],
    private readonly make: () => C,
  ) {}

  get(values: readonly string[]): C {
    const key = values.join('\u0000');
    let entry = this.#cells.get(key);
    if (!entry) {
      entry = { labels: Object.fromEntries(this.labelNames.map((l, i) => [l, values[i] ?? ''])), cell: this.make() };
      this.#cells.set(key, entry);
    }
    return entry.cell;
  }

  entries(): IterableIterator<{ labels: Record<string, string>; cell: C }> {
    return this.#cells.values();
  }
}

/** A counter: `cell(...labelValues).n++`; prom-client hears the totals at each scrape. */
export class CellCounter<L extends string> {
  readonly #cells: Cells<CountCell>;

  constructor(registry: Registry, name: string, help: string, labelNames: readonly L[]) {
    const cells = (this.#cells = new Cells<CountCell>(labelNames, () => ({ n: 0 })));
    new Counter<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const { labels, cell } of cells.entries()) if (cell.n > 0) this.inc(labels as Partial<Record<L, string>>, cell.n);
      },
    });
  }

  /** The cell of these label values, in `labelNames` order. */
  cell(...values: string[]): CountCell {
    return this.#cells.get(values);
  }
}

class BucketCell implements ObserveCell {
  /** per bucket, not cumulative; the last one is +Inf */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > (this.bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

type HistogramData<L extends string> = Awaited<ReturnType<Histogram<L>['get']>>;

/** A histogram: `cell(...labelValues).observe(v)`; its export is prom-client's, from the cells. */
export class CellHistogram<L extends string> extends Histogram<L> {
  readonly #cells: Cells<BucketCell>;
  readonly #bounds: readonly number[];
  readonly #name: string;
  readonly #help: string;

  constructor(registry: Registry, name: string, help: string, labelNames: readonly L[], buckets: readonly number[]) {
    super({ name, help, labelNames, buckets: [...buckets], registers: [registry] });
    const bounds = [...buckets].sort((a, b) => a - b);
    this.#bounds = bounds;
    this.#name = name;
    this.#help = help;
    this.#cells = new Cells(labelNames, () => new BucketCell(bounds));
  }

  /** The cell of these label values, in `labelNames` order. */
  cell(...values: string[]): ObserveCell {
    return this.#cells.get(values);
  }

  override async get(): Promise<HistogramData<L>> {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    const bucket = `${this.#name}_bucket`;
    for (const { labels, cell } of this.#cells.entries()) {
      let acc = 0;
      this.#bounds.forEach((le, i) => {
        acc += cell.counts[i] as number;
        values.push({ metricName: bucket, labels: { ...labels, le }, value: acc });
      });
      values.push({ metricName: bucket, labels: { ...labels, le: '+Inf' }, value: cell.count });
      values.push({ metricName: `${this.#name}_sum`, labels, value: cell.sum });
      values.push({ metricName: `${this.#name}_count`, labels, value: cell.count });
    }
    // the shape prom-client's own histogram returns; its declared type does not admit `le`
    return { name: this.#name, help: this.#help, type: 'histogram', values, aggregator: 'sum' } as unknown as HistogramData<L>;
  }

  /** what prom-client's registry reads (undeclared in its types): the same as `get` */
  getForPromString(): Promise<HistogramData<L>> {
    return this.get();
  }
}
