-- RELEASE  KEYS: K, {P}   ARGV: token
-- Removes exactly this token's hold (W with its U, or its reader entry)
-- and its record; nobody else's.  1 when it held; when its entry was
-- gone, LOST: 0 (expired or broken) or -2 (the server has nothing of
-- the lock any more): DIRLOCK_ELOST.
-- Then lets in whoever may go (W): after W, or after the last reader.
-- (A name left without holders stays in {P}:names until cleanup.)
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
local v = redis.call('GET', k.w)
if w_token(v) == token then
  redis.call('DEL', k.w)
  if w_mode(v) == 2 and redis.call('GET', k.u) == token then redis.call('DEL', k.u) end
  grant(k, {readers = k.readers}, nil)
  return 1
end
if redis.call('ZREM', k.r, token) == 1 then
  redis.call('HDEL', k.o, token)
  drained(k)
  k.readers = redis.call('ZRANGE', k.r, 0, 1)
  if #k.readers == 0 then grant(k, holders(k), nil) end
  return 1
end
return gone(k)
