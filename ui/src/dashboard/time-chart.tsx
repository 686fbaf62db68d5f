/**
 * One chart over time, drawn by uPlot (canvas): a line per series, a point per bucket, gaps where a
 * bucket has nothing to aggregate. A click reports the bucket under the pointer and, in a grouped
 * chart, the series the pointer is close to (uPlot's focus), or none.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { formatMetric } from "../format/values";
import type { Bucket, ChartSpec, SeriesSet } from "./dashboard-data";

/** Distinct in both themes, in the order groups are ranked. */
const PALETTE = ["#3f6fe0", "#d9822b", "#2f9e6f", "#c2418d", "#8a63d2", "#1f9fb4", "#b5a22a", "#d24c4c", "#6d7c93", "#7fa83a"];

export function seriesColor(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}

/** A value as the chart's axis and legend show it. */
export function formatChartValue(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined) return "—";
  if (unit === "count" || unit === "tokens") return formatMetric(Math.round(value * 100) / 100, null);
  if (unit === "fraction") return formatMetric(value, "percentage");
  return formatMetric(value, unit);
}

interface Props {
  spec: ChartSpec;
  buckets: Bucket[];
  series: SeriesSet;
  startMs: number;
  endMs: number;
  onBucketClick: (bucketIndex: number, seriesName: string | null) => void;
  /** A line drawn across the chart (an alert's threshold being chosen: ui/src/alerts/chart-alert-panel.tsx). */
  threshold?: number | null;
  /** While set, a click picks the value under the pointer (the threshold) instead of opening a bucket. */
  onPickValue?: ((value: number) => void) | null;
}

const HEIGHT = 190;

function themeColor(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

export function TimeChart({ spec, buckets, series, startMs, endMs, onBucketClick, threshold = null, onPickValue = null }: Props) {
  const holder = useRef<HTMLDivElement>(null);
  // The latest handlers, so the chart need not be rebuilt when the page re-renders.
  const onClick = useRef(onBucketClick);
  onClick.current = onBucketClick;
  const onPick = useRef(onPickValue);
  onPick.current = onPickValue;

  useEffect(() => {
    const element = holder.current!;
    const text = themeColor("--muted", "#62656e");
    const grid = themeColor("--border", "#dcdde2");
    const grouped = series.names.length > 1 || series.names[0] !== "";
    let focused: number | null = null;
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 200),
      height: HEIGHT,
      // Buckets are drawn at their middle over the whole window, so a click anywhere inside a
      // bucket's width lands on that bucket.
      // The threshold stays in view: the axis reaches past it.
      scales: { x: { time: true, range: [startMs / 1000, endMs / 1000] }, y: { range: (_u, min, max) => [Math.min(0, min ?? 0, threshold ?? 0), Math.max(max ?? 1, threshold ?? 0, spec.unit === "count" ? 1 : 0) * 1.25 || 1] } },
      axes: [
        { ...axis },
        { ...axis, size: 64, values: (_u, ticks) => ticks.map((v) => formatChartValue(v, spec.unit)) },
      ],
      series: [
        { value: (_u, v) => (v === null ? "—" : new Date(v * 1000).toLocaleString()) },
        ...series.names.map((name, i) => ({
          label: grouped ? name : spec.title,
          stroke: seriesColor(i),
          width: 2,
          points: { show: true, size: 5 },
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => formatChartValue(v, spec.unit),
        })),
      ],
      cursor: { drag: { x: false, y: false }, focus: { prox: 16 } },
      focus: { alpha: 0.35 },
      legend: { show: true, live: true },
      hooks: {
        draw: [
          (u) => {
            if (threshold === null) return;
            const y = Math.round(u.valToPos(threshold, "y", true));
            const ctx = u.ctx;
            ctx.save();
            ctx.strokeStyle = themeColor("--danger", "#d24c4c");
            ctx.lineWidth = 2 * devicePixelRatio;
            ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(u.bbox.left, y);
            ctx.lineTo(u.bbox.left + u.bbox.width, y);
            ctx.stroke();
            ctx.restore();
          },
        ],
        setSeries: [
          (_u, index) => {
            focused = index;
          },
        ],
      },
    };
    const data: uPlot.AlignedData = [buckets.map((b) => (b.startMs + b.endMs) / 2000), ...series.values];
    const plot = new uPlot(options, data, element);
    const click = () => {
      if (onPick.current) {
        const top = plot.cursor.top;
        if (top !== undefined && top !== null && top >= 0) onPick.current(plot.posToVal(top, "y"));
        return;
      }
      const index = plot.cursor.idx;
      if (index === null || index === undefined) return;
      onClick.current(index, grouped ? (focused === null ? null : series.names[focused - 1] ?? null) : "");
    };
    plot.over.addEventListener("click", click);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 200), height: HEIGHT }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.over.removeEventListener("click", click);
      plot.destroy();
    };
  }, [spec, buckets, series, startMs, endMs, threshold]);

  return <div class={`time-chart${onPickValue ? " picking" : ""}`} ref={holder} data-chart={spec.key} data-threshold={threshold ?? undefined} />;
}
