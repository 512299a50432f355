// The exercises' figures in node: reads [{kind, payload, width}] as JSON on stdin and prints the SVG each draws,
// by the very modules the pages run (kind "knee": app/web/charts/knee_host.js kneeChartsHtml; "row": charts_host.js).
import { kneeChartsHtml } from "../../app/web/charts/knee_host.js";
import { chartsHtml } from "../../app/web/charts/charts_host.js";

let input = "";
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(({ kind, payload, width }) =>
    kind === "knee" ? kneeChartsHtml(payload, width) : chartsHtml(payload.specs, width));
  process.stdout.write(JSON.stringify(out));
});
