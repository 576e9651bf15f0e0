-- range_common.lua - the range part every range script shares, after
-- common.lua (the protocol and its invariants R1-R5 are at the top of
-- redis_range.c): who conflicts with whom (R1), which waiters ahead hold
-- an acquirer back (R1), and the blocker's record and time left for the
-- answer.
-- R1: entry e (held or waiting) and a request in mode `ours` under
-- `policy` conflict when the mode table says so (CONFLICTS,
-- constants.lua); under `simple` every pair does
local function range_conflict(e, ours, policy)
  if policy == 3 or e.policy == 3 then return true end
  return CONFLICTS[e.mode][ours]
end
local function range_waiter_blocks(e, ours, seq, policy)
  if seq and e.seq >= seq then return false end
  local they_write, we_write = e.mode ~= 's', ours ~= 's'
  if policy == 1 then return not (we_write and not they_write) end
  if policy == 2 then return not (not we_write and they_write) end
  return true
end
local function blocker_info(k, bt, kind)
  local rec, left
  if kind == 'w' then
    rec, left = w_record(redis.call('GET', k.w)), redis.call('PTTL', k.w)
  elseif kind == 'r' then
    rec = redis.call('HGET', k.o, bt) or ''
    left = (tonumber(redis.call('ZSCORE', k.r, bt)) or NOW) - NOW
  elseif kind == 'q' then
    rec = redis.call('HGET', k.o, bt) or ''
    left = (tonumber(redis.call('ZSCORE', k.qe, bt)) or NOW) - NOW
  else
    rec = redis.call('HGET', k.go, bt) or ''
    left = (tonumber(redis.call('ZSCORE', k.ge, bt)) or NOW) - NOW
  end
  return rec, math.max(left, 0)
end
local function range_left(k, e)
  range_wake(k, e.lo, e.hi)
  if redis.call('ZCARD', k.q) > 0 then grant(k, holders(k), nil, true) end
end
