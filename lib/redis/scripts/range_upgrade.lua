-- RANGE_UPGRADE  KEYS: K, {P}   ARGV: token, stale ms, last (0/1)
-- Intent range -> exclusive.  Only while this token holds (else {-1} or
-- {-2}: lost, as UPGRADE).
-- The entry becomes u (new overlapping readers and intents wait: R1) and
-- is renewed; {1} (now x) when no overlapping read range is held, else
-- {0, reader, its record, ms until it expires}: the reader's release wakes
-- us (R3).  A failed last try goes back to i and wakes the waiters that u
-- held back.
local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])
purge(k)
local e = range_find(k, token)
if not e or e.state ~= 'h' then return {gone(k) < 0 and -2 or -1} end
redis.call('DEL', wake_key(token))
redis.call('ZADD', k.ge, 'XX', NOW + stale, token)
for _, r in ipairs(range_entries(k)) do
  if r.token ~= token and r.state == 'h' and r.mode == 's' and overlap(r.lo, r.hi, e.lo, e.hi) then
    local rec, left = blocker_info(k, r.token, 'g')
    if ARGV[3] == '1' then
      range_set(k, token, 'h', 'i', e.seq, e.los, e.his, e.policy, e.qttl)
      range_wake(k, e.lo, e.hi)
    else
      range_set(k, token, 'h', 'u', e.seq, e.los, e.his, e.policy, e.qttl)
    end
    return {0, r.token, rec, left}
  end
end
range_set(k, token, 'h', 'x', e.seq, e.los, e.his, e.policy, e.qttl)
return {1}
