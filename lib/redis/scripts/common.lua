-- common.lua - the part every script of the Redis backend starts with
-- (after constants.lua, which the build prints from the C headers):
-- clock, keys, purge, holders, queue, grant.  lib/redis/redis_scripts.c
-- says which parts make each script; every change of a lock's state on
-- the server is one script, run atomically by the server (EVALSHA): one
-- round trip per acquire attempt, per release, per refresh.  The data
-- model (the keys of lock NAME under K = {P}:NAME) is at the top of
-- redis_backend.c; each script says what it does and the invariant it
-- keeps.  Whole-line comments are left out of what the server is sent
-- (lib/redis/redis.mk).
--
-- KEYS of every script: the bases K of the names it works on, then the
-- space's key {P}:names, its set of lock names; B, the space's base {P},
-- is that key without ":names".  Only keys under the same hash tag {P}
-- are touched (K:w, K:r, ..., {P}:seq, {P}:names, {P}:wake:<token>), so
-- they all live in the slot of the given keys (Redis Cluster keeps a
-- space in one slot), and every one, given or touched, starts with
-- "{P}:" (an ACL user limited to ~{P}:* runs them all).
--
-- INVARIANTS the scripts keep together:
--   M  (mutual exclusion) K:w names at most one holder; while K:w holds a
--      token whose mode is exclusive or `simple`, or intent with K:u the
--      same token, K:r holds no live reader that entered after it -- every
--      take checks the holders in the same script that takes.
--   E  (expiry) every holder's and waiter's entry expires by the server's
--      clock after its own stale age (K:w, K:u by PX; K:r, K:qe by score,
--      purged by every script before it judges), and REFRESH extends it
--      only while it is still there: a crashed holder's lock frees itself.
--   Q  (queue order) a waiter keeps the arrival number it drew first
--      ({P}:seq) in every queue it joins; a waiter is let in only when its
--      policy lets it pass every waiter ahead of it (see `blocks` below),
--      and the relation "waits for" between waiters only ever points to a
--      lower number, or out of a waiter that nobody waits for: no cycle,
--      so no deadlock, multi-locks included.
--   W  (wake-up) a script that may have let a waiter in (release, break,
--      downgrade, a failed last try, an expiry it purged) grants the lock
--      to every queued single-name waiter that may now go (taking it for
--      it, drawing its fence) and pushes "g<fence>" to its wake list, or
--      pushes "w" to a multi-name waiter that may now try; an upgrader
--      whose readers have drained gets "g".  Nobody else is woken.
--   F  (fences) K:f only grows: each take draws max(K:f + 1, server time
--      in microseconds) for every name it takes, in the script that takes;
--      never past DIRLOCK_FENCE_MAX (a counter at it is refused, so no
--      fence is drawn twice).
-- Redis does not undo a script's writes when it fails half way, so each
-- script reads (and so type-checks) what it will change, and draws fences
-- and touches hashes before it takes anything: a key of the wrong type or
-- a fence counter that holds no number fails it before a lock is taken.
local B = string.sub(KEYS[#KEYS], 1, -7)
local tm = redis.call('TIME')
local NOW = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local NOW_US = tonumber(tm[1]) * 1000000 + tonumber(tm[2])
local function K(base)
  return {w = base .. ':w', u = base .. ':u', r = base .. ':r', q = base .. ':q',
          qe = base .. ':qe', qm = base .. ':qm', o = base .. ':o', f = base .. ':f',
          g = base .. ':g', ge = base .. ':ge', go = base .. ':go',
          p = base .. ':p', po = base .. ':po', pn = base .. ':pn', pq = base .. ':pq',
          pqe = base .. ':pqe', pqm = base .. ':pqm',
          name = string.sub(base, #B + 2)}
end
local function wake_key(t) return B .. ':wake:' .. t end
-- LATE (ACQUIRE, RANGE_ACQUIRE): `na` the request's "not after" in
-- server ms, 0 for none; a queue entry or reservation never outlives it
local function past(na) return na > 0 and NOW > na end
local function expiry(ttl, na) return na > 0 and math.min(NOW + ttl, na) or NOW + ttl end
local function push(t, msg, ttl)
  redis.call('RPUSH', wake_key(t), msg)
  redis.call('PEXPIRE', wake_key(t), math.max(ttl, 1))
end
-- class: a request's mode as its policy makes it, as a letter of the
-- mode table (CONFLICTS, constants.lua): x (exclusive, or any `simple`
-- request), s (shared), i (intent)
local function class(mode, policy)
  if policy == 3 then return 'x' end
  return MODE_LETTER[mode] or 'i'
end
local function request(t, mode, policy, stale, n, qttl, seq)
  return {token = t, mode = mode, policy = policy, cls = class(mode, policy), stale = stale,
          n = n, qttl = qttl, seq = seq}
end
-- F: the next fence of a name: max(K:f + 1, now in microseconds), at
-- most FENCE_MAX (constants.lua); a counter that is no number, or at the
-- limit, fails the script and stays as it is
local function draw_fence(k)
  local f = NOW_US
  local v = redis.call('GET', k.f)
  if v then
    if not string.match(v, '^%d+$') then
      error('the fence counter ' .. k.f .. ' held no number: ' .. v)
    end
    local last = tonumber(v)
    if last >= FENCE_MAX then
      error('the fence counter ' .. k.f .. ' is at ' .. v .. ', past the largest fence ' ..
            string.format('%.0f', FENCE_MAX) .. ': not a counter dirlock wrote')
    end
    if last >= f then f = last + 1 end
  end
  if f > FENCE_MAX then error('the server clock is past the largest fence') end
  local s = string.format('%.0f', f)
  redis.call('SET', k.f, s)
  return s
end
-- LOST: the answer of a script that found its token's entry gone:
-- 0 while the lock's fence counter is there (the entry expired or
-- was broken), GONE (-2) when the server has nothing of the lock
-- (restarted without its data, flushed, evicted: K:f never expires)
local function gone(k) return redis.call('EXISTS', k.f) == 1 and 0 or -2 end
-- K:w holds "<token> <record>": the record expires with the lock
local function w_token(v) return v and string.sub(v, 1, 32) or nil end
local function w_record(v) return v and string.sub(v, 34) or '' end
local function w_mode(v) return v and tonumber(string.match(v, ' mode=(%d)')) or 0 end
local function get_w(k) return w_token(redis.call('GET', k.w)) end
local function dequeue(k, t)
  local gone = redis.call('ZREM', k.q, t)
  redis.call('ZREM', k.qe, t)
  redis.call('HDEL', k.qm, t)
  return gone == 1
end
-- W: the readers are gone: an upgrader waiting for them may go
local function drained(k)
  if redis.call('ZCARD', k.r) > 0 then return end
  local u = redis.call('GET', k.u)
  if u and u == get_w(k) then push(u, 'g', redis.call('PTTL', k.u)) end
end
-- RANGES (redis_range.c): the entries of a name, cached in k.gs until
-- one changes (range_drop, range_set clear it)
local function range_entries(k)
  if k.gs then return k.gs end
  local gs, all = {}, redis.call('HGETALL', k.g)
  for i = 1, #all, 2 do
    local st, m, sq, lo, hi, p, ttl =
      string.match(all[i + 1], '^([hw])([sixu]) (%d+) (%S+) (%S+) (%d) (%d+)$')
    if st then
      gs[#gs + 1] = {token = all[i], state = st, mode = m, seq = tonumber(sq), los = lo, his = hi,
                     lo = tonumber(lo), hi = tonumber(hi), policy = tonumber(p), qttl = tonumber(ttl)}
    end
  end
  k.gs = gs
  return gs
end
local function range_find(k, t)
  for _, e in ipairs(range_entries(k)) do if e.token == t then return e end end
  return nil
end
local function range_set(k, t, st, m, seq, los, his, policy, qttl)
  redis.call('HSET', k.g, t, string.format('%s%s %.0f %s %s %d %d', st, m, seq, los, his, policy, qttl))
  k.gs = nil
end
local function overlap(alo, ahi, blo, bhi) return alo < bhi and blo < ahi end
-- R3: wake the waiters (and an upgrading holder) whose range meets
-- [lo, hi), not those that also meet [klo, khi) (still held)
local function range_wake(k, lo, hi, klo, khi)
  for _, e in ipairs(range_entries(k)) do
    if (e.state == 'w' or e.mode == 'u') and overlap(e.lo, e.hi, lo, hi) and
       not (klo and overlap(e.lo, e.hi, klo, khi)) and redis.call('LLEN', wake_key(e.token)) == 0 then
      push(e.token, 'w', e.qttl)
    end
  end
end
local function range_drop(k, t)
  local e = range_find(k, t)
  if not e then return nil end
  redis.call('HDEL', k.g, t)
  redis.call('ZREM', k.ge, t)
  redis.call('HDEL', k.go, t)
  k.gs = nil
  return e
end
-- E: drop expired readers and waiters with their records.  The zsets
-- are scored by expiry, so their first entries say whether any is due.
-- Leaves in k: readers (the first two live ones), nq (waiters queued).
-- Redis removes a set or hash when it empties: one EXISTS tells that a
-- name has no reader, waiter nor range at all (a plain whole lock),
-- and then there is nothing to purge and no range entry to read.
local function purge(k)
  if redis.call('EXISTS', k.r, k.q, k.g, k.ge) == 0 then
    k.readers, k.nq, k.gs = {}, 0, {}
    return false
  end
  local changed = false
  local rs = redis.call('ZRANGE', k.r, 0, 1, 'WITHSCORES')
  if #rs > 0 and tonumber(rs[2]) <= NOW then
    local dead = redis.call('ZRANGEBYSCORE', k.r, '-inf', NOW)
    redis.call('ZREMRANGEBYSCORE', k.r, '-inf', NOW)
    redis.call('HDEL', k.o, unpack(dead))
    drained(k)
    changed = true
    rs = redis.call('ZRANGE', k.r, 0, 1, 'WITHSCORES')
  end
  local gs = redis.call('ZRANGE', k.ge, 0, 0, 'WITHSCORES')
  if #gs > 0 and tonumber(gs[2]) <= NOW then
    local gone = {}
    for _, t in ipairs(redis.call('ZRANGEBYSCORE', k.ge, '-inf', NOW)) do
      gone[#gone + 1] = range_drop(k, t)
    end
    redis.call('ZREMRANGEBYSCORE', k.ge, '-inf', NOW)
    for _, e in ipairs(gone) do range_wake(k, e.lo, e.hi) end
    changed = true
  end
  k.readers = {}
  for i = 1, #rs, 2 do k.readers[#k.readers + 1] = rs[i] end
  k.nq = redis.call('ZCARD', k.q)
  if k.nq > 0 then
    local qs = redis.call('ZRANGEBYSCORE', k.qe, '-inf', NOW)
    if #qs > 0 then
      for _, t in ipairs(qs) do dequeue(k, t); redis.call('DEL', wake_key(t)) end
      redis.call('HDEL', k.o, unpack(qs))
      changed = true
      k.nq = redis.call('ZCARD', k.q)
    end
  end
  return changed
end
-- the holders of a name (after purge): W, whether W lets readers in,
-- and up to two readers
local function holders(k)
  local v = redis.call('GET', k.w)
  local h = {w = w_token(v), readers = k.readers}
  if h.w then h.wopen = w_mode(v) == 2 and redis.call('GET', k.u) ~= h.w end
  return h
end
-- M: the holder that keeps request R out, and its kind, or nil
local function holder_blocks(h, R)
  if h.w and h.w ~= R.token and (R.cls ~= 's' or not h.wopen) then return h.w, 'w' end
  if R.cls == 'x' then
    for _, r in ipairs(h.readers) do if r ~= R.token then return r, 'r' end end
  end
  return nil
end
-- take for R, whose owner record is `rec` (in K:o while it waited)
local function take(k, h, R, rec)
  if R.mode == 1 and R.policy ~= 3 then
    redis.call('HSET', k.o, R.token, rec)
    redis.call('ZADD', k.r, NOW + R.stale, R.token)
    table.insert(h.readers, R.token)
  else
    if R.seq then redis.call('HDEL', k.o, R.token) end
    redis.call('SET', k.w, R.token .. ' ' .. rec, 'PX', R.stale)
    h.w = R.token
    h.wopen = R.mode == 2 and R.policy ~= 3
    if R.mode == 2 and R.policy == 3 then redis.call('SET', k.u, R.token, 'PX', R.stale) end
  end
end
local function load_queue(k)
  local ws, toks = {}, {}
  if k.nq == 0 then return ws end
  local q = redis.call('ZRANGE', k.q, 0, -1, 'WITHSCORES')
  for i = 1, #q, 2 do toks[#toks + 1] = q[i] end
  if #toks == 0 then return ws end
  local infos = redis.call('HMGET', k.qm, unpack(toks))
  for i, t in ipairs(toks) do
    local m, p, s, n, ttl = string.match(infos[i] or '', '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
    ws[i] = request(t, tonumber(m) or 0, tonumber(p) or 0, tonumber(s) or 1000, tonumber(n) or 1,
                    tonumber(ttl) or 1000, tonumber(q[2 * i]))
  end
  return ws
end
-- Q: does waiter A (ahead of B or not) hold request B back?  When A is
-- ahead and their classes conflict (CONFLICTS), unless A gives way --
-- a `writer` reader to writers, a `reader` writer to everyone -- or B
-- passes A -- a `reader` reader passes all, a `writer` writer readers.
-- A `writer` reader also waits for every queued writer that does not
-- give way, a `reader` writer for every queued reader that does not.
local function gives_way(A, B)
  return (A.cls == 's' and A.policy == 1 and B.cls == 'x') or (A.mode == 0 and A.policy == 2)
end
local function passes(B, A)
  return (B.cls == 's' and B.policy == 2) or (B.mode == 0 and B.policy == 1 and A.cls == 's')
end
local function blocks(A, B, ahead)
  if ahead and CONFLICTS[A.cls][B.cls] and not gives_way(A, B) and not passes(B, A) then
    return true
  end
  if B.cls == 's' and B.policy == 1 and A.cls == 'x' and not (A.mode == 0 and A.policy == 2) then
    return true
  end
  return B.mode == 0 and B.policy == 2 and A.cls == 's' and A.policy ~= 1
end
local function queue_blocks(ws, R, gone)
  for j, A in ipairs(ws) do
    if A.token ~= R.token and not gone[j] and blocks(A, R, R.seq == nil or A.seq < R.seq) then
      return A
    end
  end
  return nil
end
-- R2: a held range keeps every whole request out (range waiters do
-- not: whole waiters go first, as in a directory space)
local function range_held(k)
  for _, e in ipairs(range_entries(k)) do
    if e.state == 'h' then return e.token end
  end
  return nil
end
-- W: let in whoever may go now, in queue order (not `except`); R3:
-- unless `quiet`, when no whole holder nor waiter is left, wake the
-- range waiters
local function grant(k, h, except, quiet)
  local ws, gone = load_queue(k), {}
  for i, A in ipairs(ws) do
    if A.token ~= except and not holder_blocks(h, A) and not queue_blocks(ws, A, gone) and
       not range_held(k) then
      -- (a fence that cannot be drawn: the waiter is woken to try, and
      -- hears why from its own ACQUIRE; the script that grants goes on)
      local drew, f = false, nil
      if A.n == 1 then drew, f = pcall(draw_fence, k) end
      if drew then
        dequeue(k, A.token)
        take(k, h, A, redis.call('HGET', k.o, A.token) or '')
        push(A.token, 'g' .. f, A.qttl)
        gone[i] = true
      elseif redis.call('LLEN', wake_key(A.token)) == 0 then
        push(A.token, 'w', A.qttl)
      end
    end
  end
  -- k.nq == 0: the purge of this script found none, and none joined since
  if not quiet and not h.w and #h.readers == 0 and (k.nq == 0 or redis.call('ZCARD', k.q) == 0) then
    for _, e in ipairs(range_entries(k)) do
      if e.state == 'w' and redis.call('LLEN', wake_key(e.token)) == 0 then
        push(e.token, 'w', e.qttl)
      end
    end
  end
  return ws, gone
end
