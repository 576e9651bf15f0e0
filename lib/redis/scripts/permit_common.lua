-- permit_common.lua - the counting locks' part (redis_permits.c has
-- their protocol), which BREAK, TIDY and the views share with the permit
-- scripts; after common.lua.
-- PERMITS (redis_permits.c; invariants P, Q there): K:p permit holders by
-- expiry, K:po the record of each holder and waiter, K:pn the number of
-- permits the holders asked, K:pq waiters by arrival number, K:pqe by
-- expiry, K:pqm waiter -> "N stale_ms queue_ttl_ms"
local function p_dequeue(k, t)
  local was = redis.call('ZREM', k.pq, t)
  redis.call('ZREM', k.pqe, t)
  redis.call('HDEL', k.pqm, t)
  return was == 1
end
-- E: drop expired permit holders and waiters with their records; true
-- when something went (a permit may be free)
local function p_purge(k)
  if redis.call('EXISTS', k.p, k.pq) == 0 then return false end
  local dead = redis.call('ZRANGEBYSCORE', k.p, '-inf', NOW)
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', k.p, '-inf', NOW)
    redis.call('HDEL', k.po, unpack(dead))
  end
  local qs = redis.call('ZRANGEBYSCORE', k.pqe, '-inf', NOW)
  for _, t in ipairs(qs) do
    p_dequeue(k, t)
    redis.call('HDEL', k.po, t)
    redis.call('DEL', wake_key(t))
  end
  if redis.call('ZCARD', k.p) == 0 then redis.call('DEL', k.pn) end
  return #dead > 0 or #qs > 0
end
-- the permit waiters in arrival order
local function p_queue(k)
  local ws = {}
  local q = redis.call('ZRANGE', k.pq, 0, -1, 'WITHSCORES')
  for i = 1, #q, 2 do
    local n, s, ttl = string.match(redis.call('HGET', k.pqm, q[i]) or '', '^(%d+) (%d+) (%d+)$')
    ws[#ws + 1] = {token = q[i], n = tonumber(n) or 1, stale = tonumber(s) or 1000,
                   qttl = tonumber(ttl) or 1000, seq = tonumber(q[i + 1])}
  end
  return ws
end
-- P: one more holder of a permit of N (its fence drawn before: F)
local function p_take(k, t, n, stale, rec)
  redis.call('ZADD', k.p, NOW + stale, t)
  redis.call('HSET', k.po, t, rec)
  redis.call('SET', k.pn, n)
  redis.call('SADD', B .. ':names', k.name)
end
-- W: the permits free now go to the waiters at the head of the queue, in
-- arrival order, each taken for it with its fence ("g<fence>"); a waiter
-- that asks another number than the holders (Q) is woken to hear so from
-- its own attempt, and nobody passes it
local function p_grant(k)
  local held = redis.call('ZCARD', k.p)
  local cur = tonumber(redis.call('GET', k.pn) or '')
  for _, A in ipairs(p_queue(k)) do
    if held > 0 and cur and A.n ~= cur then
      if redis.call('LLEN', wake_key(A.token)) == 0 then push(A.token, 'w', A.qttl) end
      return
    end
    if held >= A.n then return end
    local drew, f = pcall(draw_fence, k)
    if not drew then
      if redis.call('LLEN', wake_key(A.token)) == 0 then push(A.token, 'w', A.qttl) end
      return
    end
    p_dequeue(k, A.token)
    p_take(k, A.token, A.n, A.stale, redis.call('HGET', k.po, A.token) or '')
    push(A.token, 'g' .. f, A.qttl)
    held, cur = held + 1, A.n
  end
end
-- a permit holder's removal: its record, the count, the grant (W)
local function p_drop(k, t)
  if redis.call('ZREM', k.p, t) == 0 then return false end
  redis.call('HDEL', k.po, t)
  if redis.call('ZCARD', k.p) == 0 then redis.call('DEL', k.pn) end
  p_grant(k)
  return true
end
