// The append script of the Redis store: one round trip per decision on a key several isolates contend
// for, with no window maths in Redis.
//
// A compare-and-set on a key another isolate wrote since is refused, and costs a second round trip on
// the state it returns, which a third isolate may change again meanwhile (about 2.6 round trips per
// decision for one key from 4 isolates). Instead, an isolate that saw a key contended appends its
// requests to the key's log: Redis orders them (and stamps them with TIME), and answers with the
// key's state and the log entries before this one. The isolate replays those entries in the core,
// then decides its own requests, at the entry's time: every isolate that replays the same log takes
// the same decisions, since the core is deterministic. An append is never refused for a stale state,
// so a decision costs one round trip whatever the others do; the arithmetic stays in the C++ core.
//
// The log is folded back into the state by whoever knows the result: an isolate's next append carries
// the state after the entries it replayed (the fold), set only if the key still holds the state it
// replayed them on, after which those entries are dropped from the log's head. Every fold writes a new
// tagged value, so two isolates folding the same entries cannot both succeed. A compare-and-set on the
// key (redis-cas-script.js) expects the log too, and drops it on success.
//
// Expiry: the state and the log are kept alive at least `ARGV[7]` ms past the append (the longest
// an entry's effect can last, as the isolate bounds it), so the state never expires under its log.
//
// It is a branch of the store's one script (redis-script.js), taken when ARGV[1] is "append", so that
// an isolate loads one script (EVAL once after NOSCRIPT), not two.
//
// KEYS[1]  the key's state          KEYS[2]  its reservation       KEYS[3]  its log
// ARGV[1]  "append"
// ARGV[2]  the entry: the caller's tag and its requests (the script puts TIME in front: `<now>|<entry>`)
// ARGV[3]  the caller's ticket: another caller's reservation refuses the append (a compare-and-set
//          that lost twice holds the key for its next call; see redis-cas-script.js)
// ARGV[4]  the fold: the state the folded entries were replayed on ("" absent)
// ARGV[5]  how many entries of the log's head to fold (0: no fold)
// ARGV[6]  the folded state (always a new tagged value, even for a state with no bytes: a key's
//          value never returns to one a stale fold could expect)
// ARGV[7]  how long the state and log must live past now (ms)
// ARGV[8]  when the folded state expires (PXAT)
// ARGV[9]  the tag of the last entry folded: the log must still hold it at that place (a key deleted
//          and logged again may have the same state and as many entries)
//
// Returns {1, now, state, log} (the state and the entries before the appended one, after the fold),
// or {0, now, heldMs} when another caller holds the key (nothing appended).

/**
 * REDIS_APPEND_ENTRY is a Lua function both branches use (the compare-and-set appends a one-key batch
 * it cannot set, see redis-cas-script.js): it puts an entry at the end of a key's log, stamped with
 * TIME, keeps the state and the log alive at least `live` ms, and returns the entries before it.
 */
export const REDIS_APPEND_ENTRY = `local function append_entry(stateKey, logKey, entry, now, live)
  local before = redis.call('LRANGE', logKey, 0, -1)
  redis.call('RPUSH', logKey, now .. '|' .. entry)
  local ttl = redis.call('PTTL', stateKey)
  if ttl >= 0 and ttl < live then redis.call('PEXPIRE', stateKey, live) end
  ttl = redis.call('PTTL', logKey)
  if ttl < live then redis.call('PEXPIRE', logKey, live) end
  return before
end
`;

/** REDIS_APPEND_SCRIPT is the Lua source of the branch (it ends in a return). */
export const REDIS_APPEND_SCRIPT = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[3] then
  return {0, now, math.max(redis.call('PTTL', KEYS[2]), 1)}
end
local fold = tonumber(ARGV[5])
local last = fold > 0 and redis.call('LINDEX', KEYS[3], fold - 1)
if last and (redis.call('GET', KEYS[1]) or '') == ARGV[4] and string.find(last, '|' .. ARGV[9] .. '|', 1, true) then
  redis.call('LTRIM', KEYS[3], fold, -1)
  redis.call('SET', KEYS[1], ARGV[6], 'PXAT', ARGV[8])
end
local state = redis.call('GET', KEYS[1]) or ''
local before = append_entry(KEYS[1], KEYS[3], ARGV[2], now, tonumber(ARGV[7]))
if holder then redis.call('DEL', KEYS[2]) end
return {1, now, state, before}
`;
