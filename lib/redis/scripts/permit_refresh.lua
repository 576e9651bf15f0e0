-- PERMIT_REFRESH  KEYS: K, {P}   ARGV: token, stale ms
-- E: extends this token's permit while it is there: 1, or LOST.
local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])
if p_purge(k) then p_grant(k) end
if redis.call('ZSCORE', k.p, token) then
  redis.call('ZADD', k.p, 'XX', NOW + stale, token)
  return 1
end
return gone(k)
