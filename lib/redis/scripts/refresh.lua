-- REFRESH  KEYS: K, {P}   ARGV: token, stale ms
-- E: extends this token's entry to now + stale only while it is there
-- (PEXPIRE of W and U when they hold the token; ZADD XX of its reader
-- entry after the purge removed the expired ones).  1, or LOST.
local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])
purge(k)
if get_w(k) == token then
  redis.call('PEXPIRE', k.w, stale)
  if redis.call('GET', k.u) == token then redis.call('PEXPIRE', k.u, stale) end
  return 1
end
if redis.call('ZSCORE', k.r, token) then
  redis.call('ZADD', k.r, 'XX', NOW + stale, token)
  return 1
end
return gone(k)
