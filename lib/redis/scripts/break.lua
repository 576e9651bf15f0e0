-- BREAK  KEYS: K, {P}   ARGV: token
-- Removes exactly the given token's entries (W, U, reader, waiter, record,
-- wake list): a same-host owner found dead, or `dirlock break --force`.
-- A later holder has another token and is never touched.  1 when it
-- removed something; then lets in whoever may go (W).
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
p_purge(k)
local removed = 0
if get_w(k) == token then redis.call('DEL', k.w); removed = 1 end
if redis.call('GET', k.u) == token then redis.call('DEL', k.u) end
if redis.call('ZREM', k.r, token) == 1 then removed = 1; drained(k) end
k.readers = redis.call('ZRANGE', k.r, 0, 1)
if dequeue(k, token) then removed = 1 end
local g = range_drop(k, token)
if g then removed = 1; range_wake(k, g.lo, g.hi) end
redis.call('DEL', wake_key(token))
redis.call('HDEL', k.o, token)
if removed == 1 then grant(k, holders(k), nil) end
-- a permit, or a permit waiter (redis_permits.c)
if p_drop(k, token) then removed = 1 end
if p_dequeue(k, token) then removed = 1; p_grant(k) end
redis.call('HDEL', k.po, token)
return removed
