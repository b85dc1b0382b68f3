/**
 * A time-series chart (uPlot) with a heading, a legend with units and a
 * text summary for screen readers. `x` are unix seconds; each series has a
 * label and values (null = no value).
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

export interface Series {
  label: string;
  values: (number | null)[];
}

const COLORS = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989"];

interface Props {
  title: string;
  x: number[];
  series: Series[];
  /** Formats a value with its unit (axis, legend, summary). */
  format: (v: number) => string;
  height?: number;
}

export function Chart({ title, x, series, format, height = 180 }: Props) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = series.map((s) => s.label).join("|");

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(240, el.clientWidth),
      height,
      series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, value: (_u: uPlot, v: number | null) => (v === null ? "–" : format(v)) }))],
      axes: [{}, { values: (_u: uPlot, vals: number[]) => vals.map(format), size: fitLabels }],
      scales: { y: { range: (_u: uPlot, min: number, max: number) => [Math.min(0, min), Math.max(1, max * 1.1)] } },
      legend: { live: true },
    };
    plot.current = new uPlot(opts, [x, ...series.map((s) => s.values)] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(240, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [shape, height]);

  useEffect(() => {
    plot.current?.setData([x, ...series.map((s) => s.values)] as uPlot.AlignedData);
  }, [x, series]);

  const latest = series.map((s) => {
    const v = [...s.values].reverse().find((n) => n !== null);
    return `${s.label}: ${v === undefined || v === null ? "no data" : format(v)}`;
  }).join("; ");
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} class="plot" role="img" aria-label={`${title} chart. Latest: ${latest}`} />
      <p class="sr-only">Latest values: {latest}</p>
    </figure>
  );
}

/** Narrowest y axis, CSS pixels (the chart keeps its place while data is empty). */
const MIN_AXIS = 40;

/**
 * uPlot `axis.size` that fits the widest tick label: tick length + gap +
 * the label's measured width in the axis font, CSS pixels — a fixed size
 * clipped labels such as "1.5 KiB/s" on the left edge. On uPlot's later
 * layout passes (cycleNum > 1) the size is kept, so the layout settles.
 */
function fitLabels(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = u.axes[axisIdx]! as uPlot.Axis & { _size?: number; font: unknown };
  if (cycleNum > 1 && axis._size !== undefined) return axis._size;
  let widest = 0;
  if (values && values.length > 0) {
    u.ctx.font = Array.isArray(axis.font) ? String(axis.font[0]) : String(axis.font); // uPlot keeps [font scaled by pxRatio, size]
    for (const v of values) widest = Math.max(widest, u.ctx.measureText(v).width / uPlot.pxRatio);
  }
  return Math.max(MIN_AXIS, Math.ceil((axis.ticks?.size ?? 10) + (axis.gap ?? 5) + widest + 4));
}
