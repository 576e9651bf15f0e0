-- PERMIT_CHECK  KEYS: K, {P}   ARGV: token
-- Read only: 1 while this token holds an unexpired permit, else LOST.
local k, token = K(KEYS[1]), ARGV[1]
local s = redis.call('ZSCORE', k.p, token)
if s and tonumber(s) > NOW then return 1 end
return gone(k)
