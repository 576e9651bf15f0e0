-- RANGE_REFRESH  KEYS: K, {P}   ARGV: token, stale ms
-- E: extends the held entry to now + stale only while it is there (after
-- the purge removed the expired ones).  1, or LOST.
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
local e = range_find(k, token)
if not e or e.state ~= 'h' then return gone(k) end
redis.call('ZADD', k.ge, 'XX', NOW + tonumber(ARGV[2]), token)
return 1
