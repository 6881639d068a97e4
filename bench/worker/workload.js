// What the limiters are fed: client keys, the order they arrive in, and the timed loops.
//
// Timing: locally, workerd's performance.now() advances in whole milliseconds (on Cloudflare it only
// advances at I/O), so every loop runs for at least `minMs` and reads the clock once per chunk of
// CHUNK decisions; a 200 ms loop is then timed to 0.5 %.

export const CHUNK = 1024;
export const HOT_KEY = "203.0.113.7";

/** keyOf is the i-th client key, an IPv4 address (i < 2^24), built afresh on every call. */
export function keyOf(i) {
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}

/** hotKeyOf(0) is HOT_KEY, built afresh on every call (the argument keeps V8 from folding it). */
export function hotKeyOf(i) {
  return `203.0.113.${7 + i}`;
}

// How a timed loop gets each decision's key string (KEY_STRINGS):
//  - "fresh": built from its index for every decision, as a Worker gets a new header string per
//    request. The string is new (V8 has not cached its hash) and in the cache (it was just made).
//  - "reused": one string object per key, built once and passed to every decision of every
//    repetition. A Map-based limiter then finds the string's hash cached in it and may match the
//    stored key by identity; at 1M keys each string is also a cache miss. Neither happens to a
//    header, so the floors are judged on "fresh"; "reused" is shown beside it.
export const KEY_STRINGS = ["fresh", "reused"];

// mulberry32: a small seeded PRNG, so every isolate draws the same sequences (the hostile-request
// test draws from it too).
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const ORDER_LENGTH = 1 << 20;
export const ZIPF_EXPONENT = 1;

/**
 * arrivalOrder returns ORDER_LENGTH key indices in [0, keyCount): uniform, or Zipf-skewed (rank r
 * drawn with weight 1/r^s). Ranks are scattered over the key space by a multiplicative permutation
 * so the hottest keys are not the first inserted.
 */
export function arrivalOrder(keyCount, distribution) {
  const next = random(0x5eed ^ keyCount);
  const order = new Uint32Array(ORDER_LENGTH);
  if (distribution === "uniform") {
    for (let i = 0; i < ORDER_LENGTH; i++) order[i] = Math.floor(next() * keyCount);
    return order;
  }
  if (distribution !== "zipf") throw new Error(`unknown distribution ${distribution}`);
  const cumulative = new Float64Array(keyCount);
  let total = 0;
  for (let r = 0; r < keyCount; r++) {
    total += 1 / Math.pow(r + 1, ZIPF_EXPONENT);
    cumulative[r] = total;
  }
  const scatter = 7919; // prime, coprime with the key counts used (powers of ten)
  for (let i = 0; i < ORDER_LENGTH; i++) {
    const u = next() * total;
    let lo = 0;
    let hi = keyCount - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    order[i] = (lo * scatter) % keyCount;
  }
  return order;
}

/** keyList holds the strings of keys [0, keyCount): new string objects, not the ones inserted. */
export function keyList(keyCount) {
  const keys = new Array(keyCount);
  for (let i = 0; i < keyCount; i++) keys[i] = keyOf(i);
  return keys;
}

/**
 * timeSync calls decide(keyAt(order[i])) in order, cycling, for at least minMs. Returns the number of
 * decisions, the elapsed milliseconds and how many were admitted (which also keeps the calls alive).
 */
export function timeSync(decide, keyAt, order, minMs) {
  const mask = order.length - 1; // a power of two
  let i = 0;
  let decisions = 0;
  let admitted = 0;
  const start = performance.now();
  let now = start;
  do {
    for (let j = 0; j < CHUNK; j++) {
      if (decide(keyAt(order[i]))) admitted++;
      i = (i + 1) & mask;
    }
    decisions += CHUNK;
    now = performance.now();
  } while (now - start < minMs);
  return { decisions, ms: now - start, admitted };
}

/** timeAsync is timeSync for a decide that returns a Promise, awaited one at a time as a request would. */
export async function timeAsync(decide, keyAt, order, minMs) {
  const mask = order.length - 1;
  let i = 0;
  let decisions = 0;
  let admitted = 0;
  const start = performance.now();
  let now = start;
  do {
    for (let j = 0; j < CHUNK; j++) {
      if (await decide(keyAt(order[i]))) admitted++;
      i = (i + 1) & mask;
    }
    decisions += CHUNK;
    now = performance.now();
  } while (now - start < minMs);
  return { decisions, ms: now - start, admitted };
}
