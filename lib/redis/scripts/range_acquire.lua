-- RANGE_ACQUIRE  KEYS: K, {P}   ARGV: token, mode, policy, stale ms, record,
--                may_queue (0/1), last (0/1), queue ttl ms, lo, hi, not after
--                (server ms, 0: none)
-- One attempt at [lo, hi) (the ends as "%.17g": exact).  Purges the name
-- (E), then judges the request (R1, R2): free -> its held entry (keeping
-- its arrival number if it waited), its record, a fence (F): {1, fence};
-- a token that already holds (a lost reply) takes again with a new fence.
-- Busy: with may_queue and not last, its waiting entry (a reservation,
-- with the arrival number it drew first, renewed to now + queue ttl); else
-- its reservation, if any, is withdrawn and whoever it held back is woken
-- (R3).  {0, seq, blocker token, record, ms until it expires, 0, kind
-- w|r|q|g}.  Its wake list is emptied first (a wake-up older than this
-- judgement means nothing).  LATE (run after `not after`, as ACQUIRE): takes
-- nothing it does not hold, withdraws its reservation: kind 'l'; a
-- reservation never outlives `not after`.
local k, token = K(KEYS[1]), ARGV[1]
local mode, policy, stale, record = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local may_queue, last, qttl = ARGV[6] == '1', ARGV[7] == '1', tonumber(ARGV[8])
local los, his = ARGV[9], ARGV[10]
local NA = tonumber(ARGV[11]) or 0
local lo, hi = tonumber(los), tonumber(his)
local ours = MODE_LETTER[mode] or 'x'
redis.call('DEL', wake_key(token))
if purge(k) then grant(k, holders(k), nil, true) end
local me = range_find(k, token)
if me and me.state == 'h' then return {1, draw_fence(k)} end
local seq = me and me.seq or nil
local bt, kind = nil, nil
local h = holders(k)
if h.w then
  bt, kind = h.w, 'w'
elseif #h.readers > 0 then
  bt, kind = h.readers[1], 'r'
else
  local q = redis.call('ZRANGE', k.q, 0, 0)
  if #q > 0 then bt, kind = q[1], 'q' end
end
if not bt then
  for _, e in ipairs(range_entries(k)) do
    if e.token ~= token and overlap(e.lo, e.hi, lo, hi) and range_conflict(e, ours, policy) and
       (e.state == 'h' or range_waiter_blocks(e, ours, seq, policy)) then
      bt, kind = e.token, 'g'
      break
    end
  end
end
if past(NA) then
  if me then
    range_drop(k, token)
    range_left(k, me)
  end
  return {0, 0, bt or '', '', 0, 0, 'l'}
end
if not bt then
  local f = draw_fence(k)
  redis.call('SADD', B .. ':names', k.name)
  redis.call('HSET', k.go, token, record)
  range_set(k, token, 'h', ours, seq or 0, los, his, policy, qttl)
  redis.call('ZADD', k.ge, NOW + stale, token)
  return {1, f}
end
local brec, left = blocker_info(k, bt, kind)
if last or not may_queue then
  if me then
    range_drop(k, token)
    range_left(k, me)
  end
  return {0, 0, bt, brec, left, 0, kind}
end
if not seq then seq = redis.call('INCR', B .. ':seq') end
redis.call('SADD', B .. ':names', k.name)
redis.call('HSET', k.go, token, record)
range_set(k, token, 'w', ours, seq, los, his, policy, qttl)
redis.call('ZADD', k.ge, expiry(qttl, NA), token)
return {0, seq, bt, brec, left, 0, kind}
