// The exported page's packs: JSON gzipped and base64-encoded at export time (app/export/views.py pack), inflated in
// the page when first reached. The page's server, its Memory tab and its exercises all read them this one way.

/** Return a pack's JSON: base64 of gzipped JSON, inflated with the browser's own DecompressionStream. */
export async function inflate(b64) {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}
