-- RANGE_CHECK  KEYS: K, {P}   ARGV: token
-- Read only: 1 while this token holds an unexpired range entry; else
-- LOST.
local k, token = K(KEYS[1]), ARGV[1]
local v = redis.call('HGET', k.g, token)
local s = redis.call('ZSCORE', k.ge, token)
if v and string.sub(v, 1, 1) == 'h' and s and tonumber(s) > NOW then return 1 end
return gone(k)
