// The Redis store's connection: the REST client for the URL and token in effect, the script's SHA, this
// store's ticket (naming its holds and tags), the learnt round trip and timeout per REST URL, and the
// offset between Redis's clock and this isolate's.
//
// Timeouts: each call may take what the endpoint's measured round trip says (round-trip.js: smoothed
// round trip plus four times its variation, per REST URL), or a fixed `timeoutMs`, counted from when
// the call is sent: waiting in the isolate for the call ahead is not Redis's slowness. A call that does
// not answer in time is given up but not aborted: its DeadlineError carries `late`, the promise of its
// answer, which is still a round-trip sample.
//
// Time: the offset between Redis's TIME and this isolate's clock is learnt from every reply (against
// the middle of the round trip, as NTP does); decisions are taken at this isolate's clock plus it.
import { DeadlineError, withDeadline } from "./deadline.js";
import { REDIS_SCRIPT } from "./redis-script.js";
import { checkCredentials, resolveCredentials } from "./redis-options.js";
import { RoundTrips } from "./round-trip.js";
import { createUpstashRestClient, sha1Hex } from "./upstash-rest.js";

/** @import { RedisConfig } from "./redis-options.js" */
/** @import { UpstashRestClient } from "./upstash-rest.js" */
/** @import { WaitUntilContext } from "./store.js" */

/**
 * What one script call is sent through: the client, the script's SHA-1, this store's ticket, the URL.
 * @typedef {{ rest: UpstashRestClient, sha: string, caller: string, endpoint: string }} RedisLink
 */

/**
 * RedisConnection holds what every call of one store shares: the client, the round trips and the clock offset.
 */
export class RedisConnection {
  /** @type {{ url: string, token: string, rest: UpstashRestClient } | null} */
  #client = null;
  /** @type {Promise<string> | null} */
  #sha = null;
  /** @type {string | null} names this store's holds (made at first use: no randomness at global scope) */
  #ticket = null;
  /** @type {number | null} Redis's TIME minus this isolate's clock, as last measured */
  offsetMs = null;
  #config;
  #counters;
  roundTrips;

  /**
   * @param {RedisConfig} config
   * @param {{ roundTrips: number, givenUp: number }} counters counted into: HTTP requests sent, calls given up on
   */
  constructor(config, counters) {
    this.#config = config;
    this.#counters = counters;
    this.roundTrips = new RoundTrips(config.roundTrip);
  }

  /**
   * link returns what a call is sent through, for the URL and token in effect (built at first use, and
   * again if env's values change). Configuration errors throw before anything is awaited.
   * @param {unknown} env
   * @returns {Promise<RedisLink>}
   */
  link(env) {
    const { url: endpoint, rest } = this.#clientFor(env);
    return this.#scriptSha().then((sha) => ({ rest, sha, caller: (this.#ticket ??= crypto.randomUUID()), endpoint }));
  }

  /**
   * existingLink is the link of the client already built (a take-back goes where its call went), or null.
   * @returns {Promise<RedisLink | null>}
   */
  async existingLink() {
    const client = this.#client;
    if (client === null) return null;
    return { rest: client.rest, sha: await this.#scriptSha(), caller: this.#ticket ?? "", endpoint: client.url };
  }

  /**
   * commandSender returns a function that sends one plain command (DEL for reset) to the URL in effect,
   * bounded by the call timeout. Configuration errors throw here, before anything is sent.
   * @param {unknown} env
   * @returns {(command: Array<string | number>) => Promise<unknown>}
   */
  commandSender(env) {
    const { url: endpoint, rest } = this.#clientFor(env);
    return async (command) => withDeadline(rest.send(command), this.timeoutMs(endpoint), "redis");
  }

  /**
   * send sends one script call, bounded by the timeout (counted from the send), and learns Redis's clock
   * offset and the round trip from its answer. A call not answered in time is given up, not aborted:
   * the DeadlineError it rejects with carries `late`, the promise of its answer.
   * @param {RedisLink} link
   * @param {"cas" | "append"} branch the compare-and-set, or the append (its arguments then go after "append")
   * @param {string[]} scriptKeys
   * @param {Array<string | number>} args
   * @param {WaitUntilContext | undefined} ctx
   * @returns {Promise<unknown>}
   */
  async send(link, branch, scriptKeys, args, ctx) {
    const sentAtMs = this.localTime();
    const sent = branch === "append" ? ["append", ...args] : args;
    const answer = link.rest.evalScript(REDIS_SCRIPT, link.sha, scriptKeys, sent).then((reply) => {
      const receivedAtMs = this.localTime();
      this.roundTrips.sample(link.endpoint, receivedAtMs - sentAtMs); // a late answer is a round trip too
      if (Array.isArray(reply) && Number.isFinite(Number(reply[1]))) this.offsetMs = Number(reply[1]) - (sentAtMs + receivedAtMs) / 2;
      return reply;
    });
    answer.catch(() => {});
    const limitMs = this.timeoutMs(link.endpoint);
    try {
      return await withDeadline(answer, limitMs, "redis");
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      this.#counters.givenUp++;
      this.roundTrips.timedOut(link.endpoint);
      // Keep the call alive past the requests that gave up on it: its answer is still a sample.
      ctx?.waitUntil(answer.catch(() => {}));
      throw Object.assign(new DeadlineError("redis", limitMs), { late: answer });
    }
  }

  /** @param {string} endpoint @returns {number} how long a call to `endpoint` may take from its send */
  timeoutMs(endpoint) {
    return this.#config.timeoutMs ?? this.roundTrips.timeoutMs(endpoint);
  }

  /**
   * The longest a batch may take: every attempt it is allowed, each given up after the call timeout.
   * @param {string} endpoint
   * @returns {number}
   */
  batchBoundMs(endpoint) {
    return (this.#config.maxAttempts + 2) * this.timeoutMs(endpoint);
  }

  /** @returns {string} the REST URL in use ("" before the first call) */
  get endpoint() {
    return this.#client?.url ?? "";
  }

  /** @returns {number} about one round trip to Redis, as measured so far (1 before any answer) */
  typicalRoundTripMs() {
    const { srttMs } = this.roundTrips.summary;
    return Number.isFinite(srttMs) ? Math.max(1, srttMs) : 1;
  }

  /**
   * waitForHolder waits while another isolate holds a key: the holder needs about one round trip;
   * never past its hold.
   * @param {number} heldMs
   * @returns {Promise<void>}
   */
  waitForHolder(heldMs) {
    return new Promise((resolve) => setTimeout(resolve, Math.min(heldMs, this.typicalRoundTripMs())));
  }

  /** @returns {number} this isolate's clock, checked */
  localTime() {
    const now = this.#config.clock();
    if (typeof now !== "number" || !Number.isFinite(now)) throw new TypeError(`redis store: clock() returned ${String(now)}`);
    return now;
  }

  /** @returns {Promise<string>} */
  #scriptSha() {
    return (this.#sha ??= sha1Hex(REDIS_SCRIPT));
  }

  /**
   * The client for the URL and token in effect: built at first use, and again if env's values change.
   * @param {unknown} env
   */
  #clientFor(env) {
    const { url, token } = resolveCredentials(this.#config, env);
    const client = this.#client;
    if (client !== null && client.url === url && client.token === token) return client;
    checkCredentials(this.#config, { url, token });
    /** @type {typeof fetch} */
    const fetchFn = this.#config.fetch ?? ((input, init) => globalThis.fetch(input, init));
    const rest = createUpstashRestClient({ url, token, fetch: fetchFn, onRoundTrip: () => this.#counters.roundTrips++ });
    this.#client = { url, token, rest };
    return this.#client;
  }
}
