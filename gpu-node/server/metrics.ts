/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format (version 0.0.4). Enough for one process; no dependency needed.
 */

type Labels = Record<string, string>;

function labelKey(labels: Labels): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escapeLabel(labels[k] ?? "")}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function formatNumber(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Number.POSITIVE_INFINITY) return "+Inf";
  if (n === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(n);
}

interface Metric {
  readonly name: string;
  render(): string[];
}

/** A monotonically increasing count per label set. */
export class Counter implements Metric {
  private readonly values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }

  /** The current value for a label set (0 when never incremented). */
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [key, v] of this.values) lines.push(`${this.name}${key} ${formatNumber(v)}`);
    return lines;
  }
}

/**
 * Samples read at scrape time, rendered as a gauge or (for totals kept elsewhere) a counter:
 * live state such as the queue depth or the block service's tier hits is never copied or stale.
 */
export class Collector implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly collect: () => { labels?: Labels; value: number }[],
    private readonly type: "gauge" | "counter" = "gauge",
  ) {}

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const s of this.collect())
      lines.push(`${this.name}${labelKey(s.labels ?? {})} ${formatNumber(s.value)}`);
    return lines;
  }
}

/** Cumulative buckets, sum and count per label set. */
export class Histogram implements Metric {
  private readonly series = new Map<
    string,
    { labels: Labels; buckets: number[]; sum: number; count: number }
  >();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
  ) {}

  observe(labels: Labels, value: number): void {
    const key = labelKey(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    for (let i = 0; i < this.bounds.length; i++)
      if (value <= (this.bounds[i] ?? 0)) s.buckets[i] = (s.buckets[i] ?? 0) + 1;
    s.sum += value;
    s.count++;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.series.values()) {
      for (const [i, le] of this.bounds.entries())
        lines.push(
          `${this.name}_bucket${labelKey({ ...s.labels, le: formatNumber(le) })} ${s.buckets[i] ?? 0}`,
        );
      lines.push(`${this.name}_bucket${labelKey({ ...s.labels, le: "+Inf" })} ${s.count}`);
      lines.push(`${this.name}_sum${labelKey(s.labels)} ${formatNumber(s.sum)}`);
      lines.push(`${this.name}_count${labelKey(s.labels)} ${s.count}`);
    }
    return lines;
  }
}

/** Metrics in registration order. */
export class Registry {
  private readonly metrics: Metric[] = [];

  register<M extends Metric>(metric: M): M {
    if (this.metrics.some((m) => m.name === metric.name))
      throw new Error(`metric ${metric.name} registered twice`);
    this.metrics.push(metric);
    return metric;
  }

  /** The text exposition of every metric. */
  render(): string {
    return `${this.metrics.flatMap((m) => m.render()).join("\n")}\n`;
  }
}

/** Content type of the text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
