-- RANGE_SHRINK  KEYS: K, {P}   ARGV: token, lo, hi, stale ms
-- The held entry becomes [lo, hi) (a part of it: the caller checked) and
-- is renewed; R3: the waiters that met the old range and do not meet the
-- new one are woken at once.  1, or 0: lost.
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
local e = range_find(k, token)
if not e or e.state ~= 'h' then return 0 end
range_set(k, token, 'h', e.mode, e.seq, ARGV[2], ARGV[3], e.policy, e.qttl)
redis.call('ZADD', k.ge, 'XX', NOW + tonumber(ARGV[4]), token)
range_wake(k, e.lo, e.hi, tonumber(ARGV[2]), tonumber(ARGV[3]))
return 1
