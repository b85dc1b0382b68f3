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
      axes: [{}, { values: (_u: uPlot, vals: number[]) => vals.map(format), size: 80 }],
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
