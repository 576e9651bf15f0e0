-- DOWNGRADE  KEYS: K, {P}   ARGV: token, stale ms, record, policy
-- Exclusive or intent -> shared, in one step: the reader entry is made
-- before W is let go, so no writer slips in (M).  `simple` keeps W (its
-- readers hold W) and only drops U.  1, or 0: lost.
local k, token, stale, record = K(KEYS[1]), ARGV[1], tonumber(ARGV[2]), ARGV[3]
purge(k)
if get_w(k) ~= token then return 0 end
if redis.call('GET', k.u) == token then redis.call('DEL', k.u) end
if ARGV[4] == '3' then
  redis.call('SET', k.w, token .. ' ' .. record, 'KEEPTTL')
  return 1
end
redis.call('ZADD', k.r, NOW + stale, token)
redis.call('HSET', k.o, token, record)
redis.call('DEL', k.w)
table.insert(k.readers, token)
grant(k, holders(k), nil)
return 1
