-- TIDY  KEYS: K, {P}
-- cleanup, one name: purges it; a name with no holder and no waiter loses
-- its leftovers and leaves {P}:names (its fence counter stays: F) and {}
-- is returned; else every record {token, record, ...} for the caller to
-- judge (same-host dead owners are then removed with BREAK).
local k = K(KEYS[1])
if purge(k) then grant(k, holders(k), nil) end
if p_purge(k) then p_grant(k) end
if redis.call('EXISTS', k.w) == 0 and redis.call('ZCARD', k.r) == 0 and
   redis.call('ZCARD', k.q) == 0 and redis.call('EXISTS', k.g) == 0 and
   redis.call('EXISTS', k.p, k.pq) == 0 then
  redis.call('DEL', k.o, k.qm, k.qe, k.u, k.ge, k.go, k.po, k.pn, k.pqe, k.pqm)
  redis.call('SREM', B .. ':names', k.name)
  return {}
end
for _, t in ipairs(redis.call('HKEYS', k.o)) do
  if not redis.call('ZSCORE', k.r, t) and not redis.call('ZSCORE', k.q, t) then
    redis.call('HDEL', k.o, t)
  end
end
for _, t in ipairs(redis.call('HKEYS', k.go)) do
  if redis.call('HEXISTS', k.g, t) == 0 then redis.call('HDEL', k.go, t) end
end
local out = redis.call('HGETALL', k.o)
for _, v in ipairs(redis.call('HGETALL', k.go)) do out[#out + 1] = v end
for _, v in ipairs(redis.call('HGETALL', k.po)) do out[#out + 1] = v end
local v = redis.call('GET', k.w)
if v then out[#out + 1] = w_token(v); out[#out + 1] = w_record(v) end
return out
