-- UPGRADE  KEYS: K, {P}   ARGV: token, stale ms, last (0/1), simple (0/1)
-- Intent -> exclusive.  Only while this token holds W (else lost: {-1},
-- or {-2} when the server has nothing of the lock, as LOST).
-- Sets U (new readers wait for it, M) and renews W and U; {1} when no
-- reader is left, else {0, reader, its record, ms until its entry
-- expires}, and the last reader's release pushes "g" (W).  A failed last
-- try removes U (not for `simple`, whose intent always has it) and lets
-- the readers that U held back in.
local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])
purge(k)
if get_w(k) ~= token then return {gone(k) < 0 and -2 or -1} end
redis.call('SET', k.u, token, 'PX', stale)
redis.call('PEXPIRE', k.w, stale)
redis.call('DEL', wake_key(token))
local rs = redis.call('ZRANGE', k.r, 0, 0, 'WITHSCORES')
if #rs == 0 then return {1} end
local rec = redis.call('HGET', k.o, rs[1]) or ''
local left = math.max(tonumber(rs[2]) - NOW, 0)
if ARGV[3] == '1' then
  if ARGV[4] ~= '1' then redis.call('DEL', k.u) end
  grant(k, holders(k), nil)
end
return {0, rs[1], rec, left}
