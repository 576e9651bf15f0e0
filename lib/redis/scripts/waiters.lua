-- WAITERS  KEYS: K, {P}
-- After the purges: eight fields per waiter -- kind (q: a whole-lock
-- waiter, u: W's holder upgrading while readers are in, g: a range
-- waiter, G: a range upgrading, P: a permit waiter), token, owner record
-- (its acquire time is when the wait began), mode (a number, or a range's
-- letter), arrival number, a range's bounds, a permit waiter's N.
local k = K(KEYS[1])
if purge(k) then grant(k, holders(k), nil) end
if p_purge(k) then p_grant(k) end
local out = {}
local function add(kind, t, rec, mode, seq, lo, hi, n)
  for _, x in ipairs({kind, t, rec, mode, seq, lo, hi, n}) do out[#out + 1] = x end
end
local q = redis.call('ZRANGE', k.q, 0, -1, 'WITHSCORES')
for i = 1, #q, 2 do
  local m = string.match(redis.call('HGET', k.qm, q[i]) or '', '^(%d+) ') or '0'
  add('q', q[i], redis.call('HGET', k.o, q[i]) or '', m, q[i + 1], '', '', 0)
end
local v = redis.call('GET', k.w)
if v and redis.call('GET', k.u) == w_token(v) and redis.call('ZCARD', k.r) > 0 then
  add('u', w_token(v), w_record(v), '0', 0, '', '', 0)
end
for _, e in ipairs(range_entries(k)) do
  if e.state == 'w' then
    add('g', e.token, redis.call('HGET', k.go, e.token) or '', e.mode, e.seq, e.los, e.his, 0)
  elseif e.mode == 'u' then
    add('G', e.token, redis.call('HGET', k.go, e.token) or '', 'x', e.seq, e.los, e.his, 0)
  end
end
local pq = redis.call('ZRANGE', k.pq, 0, -1, 'WITHSCORES')
for i = 1, #pq, 2 do
  local n = string.match(redis.call('HGET', k.pqm, pq[i]) or '', '^(%d+) ') or '0'
  add('P', pq[i], redis.call('HGET', k.po, pq[i]) or '', '0', pq[i + 1], '', '', tonumber(n))
end
return out
