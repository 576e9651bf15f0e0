-- PERMIT_ACQUIRE  KEYS: K, {P}   ARGV: token, N, stale ms, record,
--                 may_queue (0/1), seq (0: none yet), last (0/1), not after
--                 (server ms, 0: none), queue ttl ms
-- Purges the name (E) and grants what that freed (W).  A token that holds
-- a permit already takes it again (a lost reply, a grant).  Holders that
-- asked another N: {-3, their N, a holder's record, peers} (Q; nothing
-- taken, the queue left).  Free -- fewer than N holders, counting the
-- waiters that arrived before us (FIFO: nobody passes a waiter) -- takes a
-- permit and draws a fence: {1, fence}.  Busy: queues as ACQUIRE does (or
-- leaves the queue: a try, a last attempt, LATE) and names the holder
-- whose permit expires first (kind p) or the first waiter ahead (q):
-- {0, seq, token, record, ms until it expires, 0, kind, peers}.  `peers`
-- is PEERS (redis_permits.c): {token, record, ...} of the holders whose
-- records give the host of ours (ARGV[4]: host name, boot id, pid
-- namespace), first to expire first, at most PEERS_MAX of them
-- (constants.lua; none when LATE).
local function where(rec)
  local b, ns = string.match(rec, ' boot=(%S+) pidns=(%d+) ')
  local h = string.match(rec, ' host=(.+)$')
  return b and h and (b .. ' ' .. ns .. ' ' .. h) or nil
end
local function p_peers(k, rec)
  local here, out = where(rec), {}
  if not here then return out end
  for _, t in ipairs(redis.call('ZRANGE', k.p, 0, -1)) do
    local r = redis.call('HGET', k.po, t) or ''
    if where(r) == here then
      out[#out + 1] = t
      out[#out + 1] = r
      if #out >= 2 * PEERS_MAX then break end
    end
  end
  return out
end
local token, n, stale, record = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local may_queue, seq, last = ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7] == '1'
local NA, qttl = tonumber(ARGV[8]) or 0, tonumber(ARGV[9])
local k = K(KEYS[1])
if seq > 0 then redis.call('DEL', wake_key(token)) end
if p_purge(k) then p_grant(k) end
-- ours already (a reply was lost, or a grant came meanwhile): take again
if redis.call('ZSCORE', k.p, token) then
  local f = draw_fence(k)
  redis.call('ZADD', k.p, NOW + stale, token)
  p_dequeue(k, token)
  return {1, f}
end
local held = redis.call('ZCARD', k.p)
local cur = tonumber(redis.call('GET', k.pn) or '')
if held > 0 and cur and cur ~= n then
  local h = redis.call('ZRANGE', k.p, 0, 0)
  if p_dequeue(k, token) then redis.call('HDEL', k.po, token); p_grant(k) end
  return {-3, cur, redis.call('HGET', k.po, h[1]) or '', p_peers(k, record)}
end
local ahead, first = 0, nil
for _, A in ipairs(p_queue(k)) do
  if A.token ~= token and (seq == 0 or A.seq < seq) then
    ahead = ahead + 1
    first = first or A
  end
end
local late = past(NA)
if held + ahead < n and not late then
  local f = draw_fence(k)
  p_dequeue(k, token)
  p_take(k, token, n, stale, record)
  return {1, f}
end
local bt, brec, left, kind = '', '', 0, 'l'
if late then
  last = true
elseif held >= n then
  local h = redis.call('ZRANGE', k.p, 0, 0, 'WITHSCORES')
  bt, brec, left, kind = h[1], redis.call('HGET', k.po, h[1]) or '', tonumber(h[2]) - NOW, 'p'
else
  bt, kind = first.token, 'q'
  brec = redis.call('HGET', k.po, bt) or ''
  left = (tonumber(redis.call('ZSCORE', k.pqe, bt)) or NOW) - NOW
end
if left < 0 then left = 0 end
if last or not may_queue then
  if p_dequeue(k, token) then redis.call('HDEL', k.po, token); p_grant(k) end
  return {0, 0, bt, brec, left, 0, kind, late and {} or p_peers(k, record)}
end
if seq == 0 then seq = redis.call('INCR', B .. ':seq') end
redis.call('ZADD', k.pq, seq, token)
redis.call('ZADD', k.pqe, expiry(qttl, NA), token)
redis.call('HSET', k.pqm, token, string.format('%d %d %d', n, stale, qttl))
redis.call('HSET', k.po, token, record)
redis.call('SADD', B .. ':names', k.name)
return {0, seq, bt, brec, left, 0, kind, p_peers(k, record)}
