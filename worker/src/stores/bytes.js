// Comparing state bytes, whether they arrive as an ArrayBuffer (SQLite, KV, RPC) or a view of one (the core).

/** sameBytes reports whether `a` and `b` (ArrayBuffers or typed-array views) hold the same bytes. @param {ArrayBuffer | ArrayBufferView} a @param {ArrayBuffer | ArrayBufferView} b @returns {boolean} */
export function sameBytes(a, b) {
  const x = bytesOf(a);
  const y = bytesOf(b);
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

/** @param {ArrayBuffer | ArrayBufferView} data @returns {Uint8Array} */
function bytesOf(data) {
  return ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
}
