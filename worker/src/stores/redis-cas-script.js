// The one server-side script of the Redis store: a compare-and-set of several keys' state at once, on
// Redis's clock. It knows nothing of rate limiting (no window maths): it compares strings, sets
// strings, reads TIME.
//
// KEYS[i]     the state key of check i (each key once)
// ARGV[1]     the decision time the isolate used (ms since the epoch, its estimate of Redis's clock)
// ARGV[2]     the clock tolerance (ms): a decision time further than this from TIME is refused
// ARGV[3i]    key i's state as the isolate decided on it ("" for no state: the key absent)
// ARGV[3i+1]  key i's new state ("" to leave the key as it is: a denial or a peek)
// ARGV[3i+2]  when key i's new state expires (ms since the epoch, PXAT)
//
// Returns {1, now} when every key held the expected state and the time was within tolerance (the new
// states are then set, all of them), else {0, now, state1, state2, ...}: the current states ("" for
// absent), to decide again on. `now` is TIME in ms.

/** REDIS_CAS_SCRIPT is the Lua source; its SHA-1 is what EVALSHA sends. */
export const REDIS_CAS_SCRIPT = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ok = math.abs(now - tonumber(ARGV[1])) <= tonumber(ARGV[2])
local current = {}
for i = 1, #KEYS do
  current[i] = redis.call('GET', KEYS[i]) or ''
  if current[i] ~= ARGV[3 * i] then ok = false end
end
if not ok then
  local reply = {0, now}
  for i = 1, #KEYS do reply[i + 2] = current[i] end
  return reply
end
for i = 1, #KEYS do
  if ARGV[3 * i + 1] ~= '' then
    redis.call('SET', KEYS[i], ARGV[3 * i + 1], 'PXAT', ARGV[3 * i + 2])
  end
end
return {1, now}
`;
