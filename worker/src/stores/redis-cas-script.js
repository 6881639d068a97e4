// The compare-and-set of the Redis store's script (redis-script.js): several keys' states set at once,
// on Redis's clock, if they hold what the isolate decided on. It knows nothing of rate limiting (no
// window maths): it compares strings, sets strings, reads TIME.
//
// Fairness: an isolate far from Redis (or just unlucky) could lose every race for a hot key to nearer
// ones. After losing twice in one decision it asks for a reservation: the keys are then held for it
// (for at most ARGV[4] ms); others' calls on them are refused without comparing, telling them how long
// the hold lasts, until the holder's call succeeds and releases it. The holder's next call therefore
// finds the states it was just sent and succeeds: no decision is starved.
//
// A contended key may also have a log (redis-append-script.js): requests appended in Redis's order, not
// yet folded into the state. A key's value is then its state plus its log, and a compare-and-set expects
// both (the state, and how many entries the log holds): on success it sets the new state and drops the
// log, which the new state includes (the isolate replayed it in the core).
//
// With n keys:
// KEYS[i]       (i = 1..n) the state key of check i (each key once)
// KEYS[n+i]     the reservation key of state key i
// KEYS[2n+i]    the log key of state key i
// ARGV[1]       the decision time the isolate used (ms since the epoch, its estimate of Redis's clock)
// ARGV[2]       the clock tolerance (ms): a decision time further than this from TIME is refused
// ARGV[3]       the caller's ticket (unique per isolate's store)
// ARGV[4]       reserve the keys for this long (ms) if the call is refused; 0 not to
// ARGV[5i]      key i's state as the isolate decided on it ("" for no state: the key absent)
// ARGV[5i+1]    how many log entries the isolate decided on (replayed after that state)
// ARGV[5i+2]    the tag of the last of them ("" for none): the log must still hold that entry at that
//               place (a key deleted and logged again may have the same state and log length)
// ARGV[5i+3]    key i's new state ("" to leave the key as it is: a denial or a peek on a key with no
//               log; "-" to delete it and its log)
// ARGV[5i+4]    when key i's new state expires (ms since the epoch, PXAT)
// ARGV[5n+5]    with one key: the batch as a log entry (redis-append-script.js), appended to the key's
//               log if the key does not hold the state decided on, instead of refusing ("" or
//               absent: refuse; a decision time out of tolerance alone is refused, to be sent again)
// ARGV[5n+6]    with that entry: how long the state and log must then live past now (ms)
//
// Returns {1, now} when no other caller holds a key, every key held the expected state and log length
// and the time was within tolerance (the new states are then set, their logs dropped, and the caller's
// holds released), else {0, now, heldMs, state1, ..., staten, log1, ..., logn}: how long another caller
// still holds a key (0 if none), the current states ("" for absent) and logs (arrays of entries), to
// decide again on; or, with an entry to append, {2, now, state, log}: the entry was appended, after
// the state and log entries returned (the isolate replays them, then decides the batch at `now`).
// `now` is TIME in ms.

/** REDIS_CAS_SCRIPT is the Lua source; its SHA-1 is what EVALSHA sends. */
export const REDIS_CAS_SCRIPT = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS / 3
local me = ARGV[3]
local ok = math.abs(now - tonumber(ARGV[1])) <= tonumber(ARGV[2])
local stale = false
local held = 0
local mine = {}
local current = {}
for i = 1, n do
  current[i] = redis.call('GET', KEYS[i]) or ''
  local logged = tonumber(ARGV[5 * i + 1])
  if current[i] ~= ARGV[5 * i] or redis.call('LLEN', KEYS[2 * n + i]) ~= logged then stale = true end
  if not stale and logged > 0 and not string.find(redis.call('LINDEX', KEYS[2 * n + i], logged - 1), '|' .. ARGV[5 * i + 2] .. '|', 1, true) then stale = true end
  if stale then ok = false end
  local holder = redis.call('GET', KEYS[n + i])
  if holder == me then
    mine[i] = true
  elseif holder then
    ok = false
    held = math.max(held, redis.call('PTTL', KEYS[n + i]), 1)
  end
end
if not ok then
  local entry = ARGV[5 * n + 5]
  if stale and held == 0 and n == 1 and entry and entry ~= '' then
    local before = append_entry(KEYS[1], KEYS[3], entry, now, tonumber(ARGV[5 * n + 6]))
    if mine[1] then redis.call('DEL', KEYS[2]) end
    return {2, now, current[1], before}
  end
  local reserve = tonumber(ARGV[4])
  if reserve > 0 and held == 0 then
    for i = 1, n do redis.call('SET', KEYS[n + i], me, 'PX', reserve) end
  end
  local reply = {0, now, held}
  for i = 1, n do reply[i + 3] = current[i] end
  for i = 1, n do reply[n + i + 3] = redis.call('LRANGE', KEYS[2 * n + i], 0, -1) end
  return reply
end
for i = 1, n do
  local new = ARGV[5 * i + 3]
  if new == '-' then
    redis.call('DEL', KEYS[i], KEYS[2 * n + i])
  elseif new ~= '' then
    redis.call('SET', KEYS[i], new, 'PXAT', ARGV[5 * i + 4])
    redis.call('DEL', KEYS[2 * n + i])
  end
  if mine[i] then redis.call('DEL', KEYS[n + i]) end
end
return {1, now}
`;
