// Small SVG charts drawn from a spec (lines, dots, reference lines, labelled marks): the exercises' figures on both
// pages, with no plotting library. A spec is data only (app/exercises/knee_plots.py documents the knee's), so node
// tests read what a chart draws without a browser.
import { escape } from "../words.js";

const FONT = "font-family=\"system-ui, sans-serif\"";
const MARGIN = { left: 64, right: 18, top: 30, bottom: 44 };
const LEGEND_ROW = 18;

/** Return a number as the axes print it: thousands grouped, at most one decimal, none when whole. */
export function tickText(v) {
  const abs = Math.abs(v);
  if (abs >= 1000 || Number.isInteger(v)) return Math.round(v).toLocaleString("en-US");
  if (abs >= 1) return (Math.round(v * 10) / 10).toLocaleString("en-US");
  return String(Number(v.toPrecision(2)));
}

/** Return about `count` round ticks over [lo, hi] on a linear axis (steps of 1, 2 or 5 times a power of ten). */
export function linearTicks(lo, hi, count = 5) {
  const span = hi - lo;
  if (!(span > 0)) return [lo];
  const raw = span / count, power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Return the powers of ten inside [lo, hi] (and 2x, 5x where fewer than three powers fit) for a log axis. */
export function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(Number(v.toPrecision(12)));
    }
  }
  const powers = out.filter((v) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
  return powers.length >= 3 ? powers : out;
}

/** Return the chart's scales: data to pixels on each axis, for a plot of `w` x `h` pixels inside the margins. */
export function scales(spec, w, h) {
  const axis = (log, [lo, hi], size, flip) => {
    const f = log ? Math.log10 : (v) => v;
    const a = f(lo), b = f(hi), k = b === a ? 0 : size / (b - a);
    return (v) => (flip ? size - (f(v) - a) * k : (f(v) - a) * k);
  };
  return { x: axis(spec.log_x, spec.x_range, w, false), y: axis(spec.log_y, spec.y_range, h, true) };
}

function swatch(s, x, y) {  // a legend's sample of a series or a reference line, 22 px wide, centred on y
  if (s.kind === "bars") {
    const fill = s.outline ? "none" : s.color, stroke = s.outline ? s.color : "none";
    return `<rect x="${x + 5}" y="${y - 6}" width="12" height="12" fill="${fill}" stroke="${stroke}"/>`;
  }
  return `<line x1="${x}" x2="${x + 22}" y1="${y}" y2="${y}" stroke="${s.color}" stroke-width="${s.width ?? 2}"` +
    `${dash(s.dash)}/>` + (s.dots ? marker(s.marker, x + 11, y, Math.min(s.dots, 8), s.color) : "");
}

function dash(d) {
  return d === "dashed" ? ' stroke-dasharray="6 4"' : d === "dotted" ? ' stroke-dasharray="2 3"' : "";
}

function marker(kind, x, y, size, color) {
  const at = `data-cx="${x}" data-cy="${y}"`;  // the centre, for the tests that read a chart back
  if (kind === "diamond") {
    const r = size * 0.7, [a, b] = [Number(x), Number(y)];
    return `<path ${at} d="M${a},${b - r}L${a + r},${b}L${a},${b + r}L${a - r},${b}Z" fill="${color}" stroke="#000"/>`;
  }
  return `<circle ${at} cx="${x}" cy="${y}" r="${size / 2}" fill="${color}"/>`;
}

/** Return the chart as an SVG string `width` pixels wide: title, axes, series, reference lines, marks, legend. */
export function chartSvg(spec, width) {
  const shown = spec.series.filter((s) => s.visible !== false);
  // Legend entries: each labelled series, then each reference line that names itself there (a dashed line is
  // never unexplained).
  const legend = [...shown.filter((s) => s.label),
    ...(spec.hlines ?? []).filter((l) => l.legend).map((l) => ({ ...l, label: l.legend }))];
  const legendRows = spec.legend === "below" ? legend.length : 0;
  const height = spec.height ?? 300, W = Math.max(width, 200);
  const w = W - MARGIN.left - MARGIN.right, h = height - MARGIN.top - MARGIN.bottom - legendRows * LEGEND_ROW;
  const { x, y } = scales(spec, w, h);
  const inside = (v, [lo, hi]) => v >= Math.min(lo, hi) && v <= Math.max(lo, hi);
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" class="bv-chart" data-chart="${escape(spec.id)}" ` +
    `data-log-x="${spec.log_x ? 1 : 0}" data-log-y="${spec.log_y ? 1 : 0}" width="${W}" height="${height}" ` +
    `viewBox="0 0 ${W} ${height}" role="img" aria-label="${escape(spec.title)}">`];
  out.push(`<text x="${MARGIN.left}" y="18" ${FONT} font-size="13" font-weight="bold" fill="currentColor">` +
    `${escape(spec.title)}</text>`);
  out.push(`<g transform="translate(${MARGIN.left},${MARGIN.top})">`);
  out.push(`<rect x="0" y="0" width="${w}" height="${h}" fill="none" stroke="currentColor" stroke-opacity="0.3"/>`);
  const yTicks = spec.log_y ? logTicks(...spec.y_range) : linearTicks(...spec.y_range);
  for (const v of yTicks) {
    const py = y(v).toFixed(1);
    out.push(`<line data-tick-y="${v}" x1="0" x2="${w}" y1="${py}" y2="${py}" stroke="currentColor" ` +
      `stroke-opacity="0.13"/>` +
      `<text x="-6" y="${py}" ${FONT} font-size="11" text-anchor="end" dominant-baseline="middle" ` +
      `fill="currentColor">${tickText(v)}</text>`);
  }
  for (const v of spec.x_ticks ?? (spec.log_x ? logTicks(...spec.x_range) : linearTicks(...spec.x_range))) {
    const px = x(v).toFixed(1);
    out.push(`<line data-tick-x="${v}" x1="${px}" x2="${px}" y1="${h}" y2="${h + 4}" stroke="#888888"/>` +
      `<text x="${px}" y="${h + 16}" ${FONT} font-size="11" text-anchor="middle" fill="currentColor">` +
      `${tickText(v)}</text>`);
  }
  out.push(`<text x="${w / 2}" y="${h + 34}" ${FONT} font-size="11" text-anchor="middle" fill="currentColor">` +
    `${escape(spec.x_label)}</text>`);
  out.push(`<text transform="translate(-48,${h / 2}) rotate(-90)" ${FONT} font-size="11" text-anchor="middle" ` +
    `fill="currentColor">${escape(spec.y_label)}</text>`);
  out.push(`<svg x="0" y="0" width="${w}" height="${h}" overflow="hidden">`);  // lines never leave the plot
  for (const line of spec.hlines ?? []) {
    if (!inside(line.y, spec.y_range)) continue;
    const py = y(line.y).toFixed(1);
    out.push(`<line data-hline="${escape(line.id ?? "")}" x1="0" x2="${w}" y1="${py}" y2="${py}" ` +
      `stroke="${line.color}" stroke-width="${line.width ?? 2}"${dash(line.dash)}/>`);
  }
  const base = y(spec.log_y ? spec.y_range[0] : Math.max(spec.y_range[0], 0));
  for (const s of shown.filter((t) => t.kind === "bars")) {  // [x[i], x2[i]] wide, from the axis up to y[i]
    out.push(`<g data-bars="${escape(s.id)}">`);
    s.x.forEach((left, i) => {
      const a = x(left), b = x(s.x2[i]), top = y(s.y[i]);
      const fill = s.outline ? "none" : s.color, stroke = s.outline ? s.color : s.edge ?? "none";
      out.push(`<rect x="${a.toFixed(1)}" y="${top.toFixed(1)}" width="${Math.max(b - a, 0).toFixed(1)}" ` +
        `height="${Math.max(base - top, 0).toFixed(1)}" fill="${fill}" stroke="${stroke}"/>`);
    });
    out.push("</g>");
  }
  for (const s of shown.filter((t) => t.kind !== "bars")) {
    const pts = s.x.map((v, i) => [x(v), y(s.y[i])]).filter(([, py]) => Number.isFinite(py));
    if (s.line !== false && pts.length > 1) {
      out.push(`<polyline data-series="${escape(s.id)}" fill="none" stroke="${s.color}" ` +
        `stroke-width="${s.width ?? 2}"${dash(s.dash)} points="${pts.map(([a, b]) =>
          `${a.toFixed(1)},${b.toFixed(1)}`).join(" ")}"/>`);
    }
    if (s.dots) {
      out.push(`<g data-dots="${escape(s.id)}">`);
      for (const [a, b] of pts) out.push(marker(s.marker, a.toFixed(1), b.toFixed(1), s.dots, s.color));
      out.push("</g>");
    }
  }
  for (const mark of spec.vlines ?? []) {
    const px = x(mark.x).toFixed(1);
    out.push(`<line data-vline="${escape(mark.id)}" data-x="${mark.x}" x1="${px}" x2="${px}" y1="0" y2="${h}" ` +
      `stroke="${mark.color}" ` +
      `stroke-width="${mark.width ?? 2}"${dash(mark.dash)}/>`);
  }
  out.push("</svg>");
  for (const line of spec.hlines ?? []) {  // a reference line's words sit just above it, at the left
    if (!line.label || !inside(line.y, spec.y_range)) continue;
    out.push(`<text x="4" y="${(y(line.y) - 4).toFixed(1)}" ${FONT} font-size="11" fill="${line.color}">` +
      `${escape(line.label)}</text>`);
  }
  for (const mark of spec.vlines ?? []) {  // hung from the top, left of the line (right of it at the left edge)
    if (!mark.label) continue;
    const px = x(mark.x), left = px > w * 0.1;
    out.push(`<text x="${(px + (left ? -4 : 4)).toFixed(1)}" y="${14 + 16 * (mark.row ?? 0)}" ${FONT} ` +
      `font-size="11"${mark.bold ? ' font-weight="bold"' : ""} text-anchor="${left ? "end" : "start"}" ` +
      `fill="${mark.color}">${escape(mark.label)}</text>`);
  }
  if (spec.legend === "top_right" || spec.legend === "bottom_right") {  // inside a right corner, on a white card
    const wide = 30 + 6 * Math.max(...legend.map((s) => s.label.length)), left = w - 8 - wide;
    const first = spec.legend === "top_right" ? 14 : h - 8 - (legend.length - 1) * LEGEND_ROW;
    if (legend.length) {
      out.push(`<rect x="${left - 4}" y="${first - 12}" width="${wide + 8}" height="${legend.length * LEGEND_ROW}" ` +
        `fill="var(--bv-background, #FFFFFF)" fill-opacity="0.85"/>`);
    }
    legend.forEach((s, k) => {
      const ty = first + k * LEGEND_ROW;
      out.push(swatch(s, left, ty - 4) + `<text x="${left + 26}" y="${ty}" ${FONT} font-size="10" ` +
        `fill="currentColor">${escape(s.label)}</text>`);
    });
  }
  out.push("</g>");
  if (spec.legend === "below") {
    legend.forEach((s, k) => {
      const ty = height - 8 - (legendRows - 1 - k) * LEGEND_ROW;
      out.push(swatch(s, MARGIN.left, ty - 4) +
        `<text x="${MARGIN.left + 30}" y="${ty}" ${FONT} font-size="11" fill="currentColor">${escape(s.label)}</text>`);
    });
  }
  out.push("</svg>");
  return out.join("");
}
