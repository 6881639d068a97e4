// The one server-side script of the Redis store: a compare-and-set of several keys' state at once, on
// Redis's clock. It knows nothing of rate limiting (no window maths): it compares strings, sets
// strings, reads TIME.
//
// Fairness: an isolate far from Redis (or just unlucky) could lose every race for a hot key to nearer
// ones. After losing twice in one decision it asks for a reservation: the keys are then held for it
// (for at most ARGV[4] ms); others' calls on them are refused without comparing, telling them how long
// the hold lasts, until the holder's call succeeds and releases it. The holder's next call therefore
// finds the states it was just sent and succeeds: no decision is starved.
//
// With n keys:
// KEYS[i]       (i = 1..n) the state key of check i (each key once)
// KEYS[n+i]     the reservation key of state key i
// ARGV[1]       the decision time the isolate used (ms since the epoch, its estimate of Redis's clock)
// ARGV[2]       the clock tolerance (ms): a decision time further than this from TIME is refused
// ARGV[3]       the caller's ticket (unique per isolate's store)
// ARGV[4]       reserve the keys for this long (ms) if the call is refused; 0 not to
// ARGV[3i+2]    key i's state as the isolate decided on it ("" for no state: the key absent)
// ARGV[3i+3]    key i's new state ("" to leave the key as it is: a denial or a peek; "-" to delete it:
//               taking back a write that replaced an absent key)
// ARGV[3i+4]    when key i's new state expires (ms since the epoch, PXAT)
//
// Returns {1, now} when no other caller holds a key, every key held the expected state and the time
// was within tolerance (the new states are then set, all of them, and the caller's holds released),
// else {0, now, heldMs, state1, ..., staten}: how long another caller still holds a key (0 if none)
// and the current states ("" for absent), to decide again on. `now` is TIME in ms.

/** REDIS_CAS_SCRIPT is the Lua source; its SHA-1 is what EVALSHA sends. */
export const REDIS_CAS_SCRIPT = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS / 2
local me = ARGV[3]
local ok = math.abs(now - tonumber(ARGV[1])) <= tonumber(ARGV[2])
local held = 0
local mine = {}
local current = {}
for i = 1, n do
  current[i] = redis.call('GET', KEYS[i]) or ''
  if current[i] ~= ARGV[3 * i + 2] then ok = false end
  local holder = redis.call('GET', KEYS[n + i])
  if holder == me then
    mine[i] = true
  elseif holder then
    ok = false
    held = math.max(held, redis.call('PTTL', KEYS[n + i]), 1)
  end
end
if not ok then
  local reserve = tonumber(ARGV[4])
  if reserve > 0 and held == 0 then
    for i = 1, n do redis.call('SET', KEYS[n + i], me, 'PX', reserve) end
  end
  local reply = {0, now, held}
  for i = 1, n do reply[i + 3] = current[i] end
  return reply
end
for i = 1, n do
  local new = ARGV[3 * i + 3]
  if new == '-' then
    redis.call('DEL', KEYS[i])
  elseif new ~= '' then
    redis.call('SET', KEYS[i], new, 'PXAT', ARGV[3 * i + 4])
  end
  if mine[i] then redis.call('DEL', KEYS[n + i]) end
end
return {1, now}
`;
