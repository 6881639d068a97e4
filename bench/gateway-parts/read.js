// The least a masking gateway does to a small response, with none of sluice in it: fetch the upstream
// with the client's headers as a record, read the body whole into JavaScript (where a scan could
// read it), and answer a new Response of those bytes with the upstream's headers as a record.
import { env } from "cloudflare:workers";

/** @param {Headers} headers */
function record(headers) {
  /** @type {Record<string, string>} */
  const out = Object.create(null);
  headers.forEach((value, name) => {
    if (name !== "host" && name !== "connection") out[name] = value;
  });
  return out;
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const upstream = await fetch(`${env.UPSTREAM_ORIGIN}${url.pathname}${url.search}`, { method: request.method, headers: record(request.headers), redirect: "manual" });
    const bytes = await upstream.arrayBuffer();
    return new Response(bytes, { status: upstream.status, headers: record(upstream.headers) });
  },
};
