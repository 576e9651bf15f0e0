-- ACQUIRE  KEYS: K1..Kn, {P}   ARGV: token, mode, policy, stale ms, record,
--          may_queue (0/1), seq (0: none yet), last (0/1), not after (server
--          ms, 0: none), queue ttl ms
-- All or nothing over the n names.  Purges each name, lets in the queued
-- waiters that may go (W), then judges the request against the holders
-- (M) and the waiters (Q).  Free everywhere: takes every name (a holder
-- that asks again, after a lost reply, simply takes it again), leaves the
-- queues, records the owner, draws a fence per name (F): {1, fence...}.
-- Busy: with may_queue and not last, joins the queue of every busy name
-- (and renews it where it already waits) with its one arrival number;
-- else leaves every queue and lets in whoever it held back.  Returns {0,
-- seq, blocker token, blocker record, ms until the blocker's entry
-- expires, index of the busy name, kind w|r|q}.  Its wake list is emptied
-- first: a wake-up older than this judgement means nothing.
-- LATE: run after `not after` (the request sat in a stopped or stalled
-- server while its sender gave up), it takes nothing it does not hold
-- already and leaves every queue, as a last attempt does: kind 'l'.  Its
-- queue entries never outlive `not after` either, so no release grants
-- the lock to a waiter that has given up.
local token, mode, policy = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local stale, record = tonumber(ARGV[4]), ARGV[5]
local may_queue, seq, last = ARGV[6] == '1', tonumber(ARGV[7]), ARGV[8] == '1'
local qttl = tonumber(ARGV[10])
local NA = tonumber(ARGV[9]) or 0
local n = #KEYS - 1
local R = request(token, mode, policy, stale, n, qttl, seq > 0 and seq or nil)
if R.seq then redis.call('DEL', wake_key(token)) end
local ks, hs, busy, blocker, allours = {}, {}, {}, nil, true
for i = 1, n do
  local k = K(KEYS[i])
  ks[i] = k
  local changed = purge(k)
  local h = holders(k)
  hs[i] = h
  local ws, gone = nil, {}
  if changed or not h.w or h.wopen then ws, gone = grant(k, h, token, not changed) end
  local bt, kind = nil, nil
  -- ours already (a reply was lost, or a grant came meanwhile): take again
  local ours = h.w == token or (#h.readers > 0 and redis.call('ZSCORE', k.r, token))
  if not ours then
    allours = false
    bt, kind = holder_blocks(h, R)
    if not bt then
      local A = queue_blocks(ws or load_queue(k), R, gone)
      if A then bt, kind = A.token, 'q' end
    end
    if not bt then
      local g = range_held(k)
      if g then bt, kind = g, 'g' end
    end
  end
  if bt then
    busy[i] = true
    if not blocker then blocker = {i, bt, kind} end
  end
end
local late = past(NA) and not allours
if late then
  last = true
  blocker = {blocker and blocker[1] or 1, '', 'l'}
end
if not blocker then
  -- what can fail (a key of the wrong type) before anything is taken
  local out = {1}
  for i = 1, n do
    out[#out + 1] = draw_fence(ks[i])
    redis.call('SADD', B .. ':names', ks[i].name)
  end
  for i = 1, n do
    if R.seq then dequeue(ks[i], token) end
    take(ks[i], hs[i], R, record)
  end
  return out
end
local bi, bt, kind = blocker[1], blocker[2], blocker[3]
local bk = ks[bi]
local brec, left
if kind == 'l' then
  brec, left = '', 0
elseif kind == 'w' then
  brec, left = w_record(redis.call('GET', bk.w)), redis.call('PTTL', bk.w)
elseif kind == 'g' then
  brec = redis.call('HGET', bk.go, bt) or ''
  left = (tonumber(redis.call('ZSCORE', bk.ge, bt)) or NOW) - NOW
elseif kind == 'r' then
  brec = redis.call('HGET', bk.o, bt) or ''
  left = (tonumber(redis.call('ZSCORE', bk.r, bt)) or NOW) - NOW
else
  brec = redis.call('HGET', bk.o, bt) or ''
  left = (tonumber(redis.call('ZSCORE', bk.qe, bt)) or NOW) - NOW
end
if left < 0 then left = 0 end
if last or not may_queue then
  for i = 1, R.seq and n or 0 do
    if dequeue(ks[i], token) then
      redis.call('HDEL', ks[i].o, token)
      grant(ks[i], holders(ks[i]), token)
    end
  end
  return {0, 0, bt, brec, left, bi - 1, kind}
end
if not R.seq then R.seq = redis.call('INCR', B .. ':seq') end
local info = string.format('%d %d %d %d %d', mode, policy, stale, n, qttl)
for i = 1, n do
  local k = ks[i]
  if busy[i] or redis.call('ZSCORE', k.q, token) then
    redis.call('ZADD', k.q, R.seq, token)
    redis.call('ZADD', k.qe, expiry(qttl, NA), token)
    redis.call('HSET', k.qm, token, info)
    redis.call('HSET', k.o, token, record)
    redis.call('SADD', B .. ':names', k.name)
  end
end
return {0, R.seq, bt, brec, left, bi - 1, kind}
