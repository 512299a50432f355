// Text helpers every module of the page shares, each as app/page/words.py, Python's html.escape and Python's number
// formats write it.

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" };
/** Return `s` escaped for HTML text and attributes, as Python's html.escape(s) does. */
export const escape = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);
/** Return "1 row", "2 rows": a count with its noun agreeing (app/page/words.py plural). */
export const plural = (n, word) => (n === 1 ? `${n} ${word}` : `${n} ${word}s`);

// ---- numbers as Python's: exact ties round to even there, up in JavaScript's toFixed -----------------------------
/** Return x with `digits` decimals, as Python's f"{x:.{digits}f}" writes it. */
export function fixed(x, digits) {
  // toFixed rounds the double's exact value, as Python does, except that an exact tie goes up: find those from the
  // exact expansion (9.95 is 9.9499999… and no tie; 0.25 is one) and round them to even.
  const exact = x.toFixed(Math.min(100, digits + 60)), cut = exact.length - (60 + (digits ? 0 : 1));
  if (!/^50*$/.test(exact.slice(cut).replace(".", ""))) return x.toFixed(digits);
  const f = Math.floor(x * 10 ** digits);
  return ((f % 2 === 0 ? f : f + 1) / 10 ** digits).toFixed(digits);
}
/** Return x as a whole percentage, as Python's "{:.0%}" writes it. */
export function pct(x) {
  return fixed(x * 100, 0) + "%";  // Python's "{:.0%}" multiplies the double by 100, then rounds as "{:.0f}"
}
/** Return x with `digits` decimals and thousands separated, as Python's f"{x:,.{digits}f}" writes it. */
export const thousands = (x, digits) => {
  const [whole, frac] = fixed(x, digits).split(".");
  const sign = whole.startsWith("-") ? "-" : "";
  const w = sign ? whole.slice(1) : whole;
  return sign + w.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (frac === undefined ? "" : "." + frac);
};
