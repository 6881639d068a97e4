// The floor of hand-written JS: three limiters on a plain Map, the way one writes them in a Worker
// without a library. Every figure is also reported as a ratio against PlainFixedWindow.
//
// Each decide(key, nowMs) returns the same information sluice's check returns (allowed, remaining,
// resetMs), since a limiter that only answers yes/no cannot fill the RateLimit headers.

/** Fixed window aligned to the epoch: at most `limit` per `windowMs`. */
export class PlainFixedWindow {
  #limit;
  #windowMs;
  #entries = new Map();

  constructor({ limit, windowMs }) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  get size() {
    return this.#entries.size;
  }

  decide(key, nowMs) {
    const window = Math.floor(nowMs / this.#windowMs);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { window, count: 0 };
      this.#entries.set(key, entry);
    } else if (entry.window !== window) {
      entry.window = window;
      entry.count = 0;
    }
    const resetMs = (window + 1) * this.#windowMs - nowMs;
    if (entry.count + 1 > this.#limit) return { allowed: false, remaining: 0, resetMs };
    entry.count++;
    return { allowed: true, remaining: this.#limit - entry.count, resetMs };
  }
}

/** Sliding-window counter: this window's count plus the previous one's, weighted by its overlap. */
export class PlainSlidingCounter {
  #limit;
  #windowMs;
  #entries = new Map();

  constructor({ limit, windowMs }) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  get size() {
    return this.#entries.size;
  }

  decide(key, nowMs) {
    const windowMs = this.#windowMs;
    const window = Math.floor(nowMs / windowMs);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { window, current: 0, previous: 0 };
      this.#entries.set(key, entry);
    } else if (entry.window !== window) {
      entry.previous = entry.window === window - 1 ? entry.current : 0;
      entry.current = 0;
      entry.window = window;
    }
    const overlap = 1 - (nowMs - window * windowMs) / windowMs;
    const used = Math.floor(entry.previous * overlap) + entry.current;
    const resetMs = (window + 1) * windowMs - nowMs;
    if (used + 1 > this.#limit) return { allowed: false, remaining: 0, resetMs };
    entry.current++;
    return { allowed: true, remaining: this.#limit - used - 1, resetMs };
  }
}

/** Token bucket: `limit` tokens refilled evenly over `windowMs`, holding at most `limit`. */
export class PlainTokenBucket {
  #capacity;
  #tokensPerMs;
  #entries = new Map();

  constructor({ limit, windowMs }) {
    this.#capacity = limit;
    this.#tokensPerMs = limit / windowMs;
  }

  get size() {
    return this.#entries.size;
  }

  decide(key, nowMs) {
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { tokens: this.#capacity, lastMs: nowMs };
      this.#entries.set(key, entry);
    } else if (nowMs > entry.lastMs) {
      entry.tokens = Math.min(this.#capacity, entry.tokens + (nowMs - entry.lastMs) * this.#tokensPerMs);
      entry.lastMs = nowMs;
    }
    const resetMs = Math.ceil((this.#capacity - entry.tokens) / this.#tokensPerMs);
    if (entry.tokens < 1) return { allowed: false, remaining: 0, resetMs };
    entry.tokens -= 1;
    return { allowed: true, remaining: Math.floor(entry.tokens), resetMs };
  }
}
