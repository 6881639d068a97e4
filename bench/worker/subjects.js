// The limiters under test, each behind one adapter: decide(key) admits or denies one request of
// cost 1 at the current time and returns true when admitted (or a Promise of it, for the peers
// whose API is asynchronous). Every adapter reads Date.now() per decision, as a Worker must (the
// hono-rate-limiter and express-rate-limit stores read it inside increment()).
import wasmModule from "../../wasm-bindings/sluice.wasm";
import { SluiceCore } from "../../wasm-bindings/sluice.js";
import RateLimiterMemory from "rate-limiter-flexible/lib/RateLimiterMemory.js";
import { MemoryStore as HonoMemoryStore } from "hono-rate-limiter";
import { MemoryStore as ExpressMemoryStore } from "express-rate-limit";
import { PlainFixedWindow, PlainSlidingCounter, PlainTokenBucket } from "./plain-js.js";
import { SUBJECT_INFO } from "./subject-info.js";

function plain(Limiter) {
  return (config) => {
    const limiter = new Limiter(config);
    return {
      decide: (key) => limiter.decide(key, Date.now()).allowed,
      keysHeld: () => limiter.size,
    };
  };
}

function sluice(algorithm) {
  return ({ limit, windowMs, keyCapacity }) => {
    const core = SluiceCore.instantiate(wasmModule);
    const rule = core.addRule({ algorithm, limit, windowMs, keyCapacity });
    return {
      decide: (key) => core.check(rule, key, 1, Date.now()).allowed,
      keysHeld: () => core.stats(rule).keys,
      // Linear memory lives outside the V8 heap: the bytes/key figure adds it to the heap's growth.
      linearMemoryBytes: () => core.memoryBytes,
      stats: () => core.stats(rule),
    };
  };
}

// The harness alone: reads the clock and the key as every adapter does (the loop gets the key string,
// built or reused), and decides nothing. Its rate is the ceiling no limiter can pass in this bench.
function harness() {
  return {
    decide: (key) => Date.now() > key.charCodeAt(key.length - 1),
    keysHeld: () => 0,
  };
}

function rateLimiterFlexible({ limit, windowMs }) {
  const limiter = new RateLimiterMemory({ points: limit, duration: windowMs / 1000 });
  const admit = () => true;
  // consume rejects with a RateLimiterRes when the key is over its limit, and with an Error when it
  // fails (in workerd: too many timers in one request), which must not pass for a denial.
  const deny = (reason) => {
    if (reason instanceof Error) throw reason;
    return false;
  };
  return {
    decide: (key) => limiter.consume(key).then(admit, deny),
    keysHeld: () => limiter._memoryStorage._storage.size,
  };
}

// hono-rate-limiter's and express-rate-limit's stores only count; their middleware compares the count
// with the limit, as these adapters do. Their init() starts a setInterval, which workerd allows only
// inside a request, so subjects are created inside one.
function honoStore({ limit, windowMs }) {
  const store = new HonoMemoryStore();
  store.init({ windowMs });
  return {
    decide: (key) => store.increment(key).totalHits <= limit,
    keysHeld: () => store.current.size + store.previous.size,
  };
}

function expressStore({ limit, windowMs }) {
  const store = new ExpressMemoryStore();
  store.init({ windowMs });
  return {
    decide: async (key) => (await store.increment(key)).totalHits <= limit,
    keysHeld: () => store.current.size + store.previous.size,
  };
}

// How each subject is made and whether its decide is asynchronous; who it is: ./subject-info.js.
const MAKERS = {
  "plain-fixed-window": { asynchronous: false, make: plain(PlainFixedWindow) },
  "plain-sliding-counter": { asynchronous: false, make: plain(PlainSlidingCounter) },
  "plain-token-bucket": { asynchronous: false, make: plain(PlainTokenBucket) },
  "sluice-fixed-window": { asynchronous: false, make: sluice("fixed-window") },
  "sluice-sliding-counter": { asynchronous: false, make: sluice("sliding-counter") },
  "sluice-token-bucket": { asynchronous: false, make: sluice("token-bucket") },
  "sluice-leaky-bucket": { asynchronous: false, make: sluice("leaky-bucket") },
  "sluice-gcra": { asynchronous: false, make: sluice("gcra") },
  "sluice-sliding-log": { asynchronous: false, make: sluice("sliding-log") },
  "harness-only": { asynchronous: false, make: harness },
  "rate-limiter-flexible": { asynchronous: true, make: rateLimiterFlexible },
  "hono-rate-limiter-store": { asynchronous: false, make: honoStore },
  "express-rate-limit-store": { asynchronous: true, make: expressStore },
};

/** SUBJECTS: name -> { asynchronous, make(config), ...its SUBJECT_INFO }. */
export const SUBJECTS = Object.freeze(
  Object.fromEntries(Object.entries(SUBJECT_INFO).map(([name, info]) => [name, { ...info, ...MAKERS[name] }])),
);
