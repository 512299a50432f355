// Text helpers every module of the page shares, each as app/page/words.py and Python's html.escape write it.

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" };
/** Return `s` escaped for HTML text and attributes, as Python's html.escape(s) does. */
export const escape = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);
/** Return "1 row", "2 rows": a count with its noun agreeing (app/page/words.py plural). */
export const plural = (n, word) => (n === 1 ? `${n} ${word}` : `${n} ${word}s`);
