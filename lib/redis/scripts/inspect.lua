-- INSPECT  KEYS: K, {P}
-- After the purge: {W's token or '', its record, ms until W expires,
-- 1 when W is upgraded (U), readers, waiters, held ranges}.
local k = K(KEYS[1])
if purge(k) then grant(k, holders(k), nil) end
local v = redis.call('GET', k.w)
local w, rec, left = w_token(v), w_record(v), 0
if w then left = redis.call('PTTL', k.w) end
local u = redis.call('GET', k.u)
local held = 0
for _, e in ipairs(range_entries(k)) do
  if e.state == 'h' then held = held + 1 end
end
return {w or '', rec, left, (w and u == w) and 1 or 0,
        redis.call('ZCARD', k.r), redis.call('ZCARD', k.q), held}
