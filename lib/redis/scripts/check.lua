-- CHECK  KEYS: K, {P}   ARGV: token
-- Read only: 1 while this token holds W or an unexpired reader entry;
-- else LOST.
local k, token = K(KEYS[1]), ARGV[1]
if get_w(k) == token then return 1 end
local s = redis.call('ZSCORE', k.r, token)
if s and tonumber(s) > NOW then return 1 end
return gone(k)
