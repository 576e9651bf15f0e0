-- HOLDERS  KEYS: K, {P}
-- After the purges: the last fence drawn for the name ('0': none), then
-- five fields per holder -- kind (w: W's holder, r: a reader, p: a
-- permit), token, owner record, ms until its entry expires, the N of a
-- permit (else 0).  Ranges are dirlock_ranges'.
local k = K(KEYS[1])
if purge(k) then grant(k, holders(k), nil) end
if p_purge(k) then p_grant(k) end
local out = {redis.call('GET', k.f) or '0'}
local function add(kind, t, rec, left, n)
  for _, x in ipairs({kind, t, rec, math.max(left, 0), n}) do out[#out + 1] = x end
end
local v = redis.call('GET', k.w)
if v then add('w', w_token(v), w_record(v), redis.call('PTTL', k.w), 0) end
local rs = redis.call('ZRANGE', k.r, 0, -1, 'WITHSCORES')
for i = 1, #rs, 2 do add('r', rs[i], redis.call('HGET', k.o, rs[i]) or '', tonumber(rs[i + 1]) - NOW, 0) end
local pn = tonumber(redis.call('GET', k.pn) or '') or 0
local ps = redis.call('ZRANGE', k.p, 0, -1, 'WITHSCORES')
for i = 1, #ps, 2 do add('p', ps[i], redis.call('HGET', k.po, ps[i]) or '', tonumber(ps[i + 1]) - NOW, pn) end
return out
