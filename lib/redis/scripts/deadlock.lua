-- DEADLOCK  KEYS: K, {P}   ARGV: kind ('q': a whole-lock wait, 'p': a
--           permit wait), token, arrival number, index ttl ms, the most
--           threads to read
-- Read only but for the wait index ({P}:dw thread -> "<kind> <seq>
-- <token> <name>", {P}:dwe thread by expiry) and a wake-up.  {-1} when the
-- token does not wait for K under that arrival number (granted, left,
-- expired: E).  Else notes the wait in the index, reads the graph from it
-- and takes the knot around it (KNOTS): {0}, none; {2}, one whose victim
-- (the youngest wait: the highest arrival number) is another thread,
-- which is woken ("d": check now) unless a message waits for it already;
-- or, when the asker is the victim, marks its wait told in the index
-- (kind 'x': followed no more) and answers {1, asker's record, number of
-- threads in the knot, number of steps, then per step of its shortest
-- cycle through the asker the name waited for, the record of the hold in
-- the way and 't' (the hold is its thread's) or 'p' (its partner's) --
-- the last hold being the asker's -- then the wait record of every other
-- thread of the knot}.
local kind, token, seq, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local NODES = tonumber(ARGV[5])
local DW, DWE = B .. ':dw', B .. ':dwe'
-- THREADS: the threads a hold belongs to, "host boot pidns pid tid": its
-- taker (only with a tid: none for DIRLOCK_NO_DEADLOCK and pending
-- acquires) and then its partner's main thread
local function threads(rec)
  local out = {}
  local host = string.match(rec, ' host=(.*)$')
  local pid, boot = string.match(rec, ' pid=(%d+) '), string.match(rec, ' boot=(%S+)')
  local ns, tid = string.match(rec, ' pidns=(%d+)'), string.match(rec, ' tid=(%d+)')
  if not (host and pid and boot and ns and tid) or tid == '0' then return out end
  local base = host .. ' ' .. boot .. ' ' .. ns .. ' '
  out[1] = {base .. pid .. ' ' .. tid, 't'}
  local partner = string.match(rec, ' partner=(%d+):')
  if partner then out[2] = {base .. partner .. ' ' .. partner, 'p'} end
  return out
end
local function live(z, t)
  local s = tonumber(redis.call('ZSCORE', z, t))
  return s ~= nil and s > NOW
end
-- A WAIT as the server has it: token t queued for `name` under arrival
-- number s, its entry unexpired (E), one name only; its thread `id`
local function live_wait(wk, s, t, name, id)
  local k = K(B .. ':' .. name)
  local w = {k = k, kind = wk, token = t, name = name, seq = s}
  if wk == 'q' then
    if tonumber(redis.call('ZSCORE', k.q, t)) ~= s or not live(k.qe, t) then return nil end
    local m, p, n = string.match(redis.call('HGET', k.qm, t) or '', '^(%d+) (%d+) %d+ (%d+) ')
    if not m or n ~= '1' then return nil end
    w.R, w.rec = request(t, tonumber(m), tonumber(p), 0, 1, 0, s), redis.call('HGET', k.o, t)
  elseif wk == 'p' then
    if tonumber(redis.call('ZSCORE', k.pq, t)) ~= s or not live(k.pqe, t) then return nil end
    w.n = tonumber(string.match(redis.call('HGET', k.pqm, t) or '', '^(%d+) '))
    w.rec = redis.call('HGET', k.po, t)
    if not w.n or w.n < 1 then return nil end
  else
    return nil
  end
  local th = threads(w.rec or '')
  if not th[1] or (id and th[1][1] ~= id) then return nil end
  w.id = th[1][1]
  return w
end
-- the wait the index names for thread id (kind 'x', told: none)
local function wait_of(id)
  local wk, s, t, name = string.match(redis.call('HGET', DW, id) or '', '^(%a) (%d+) (%S+) (.+)$')
  if not wk then return nil end
  return live_wait(wk, tonumber(s), t, name, id)
end
-- BLOCKERS: the records of the unexpired holds that keep wait w out,
-- and how many of them must stay for it to stay out: a whole request
-- is kept out by W's holder when holder_blocks says so (M), by every
-- reader when it is exclusive, by every held range (R2) -- any one; a
-- permit wait by the permits held, while N of them stay (P)
local function blockers(w)
  local k, out = w.k, {}
  if w.kind == 'p' then
    for _, t in ipairs(redis.call('ZRANGEBYSCORE', k.p, '(' .. NOW, '+inf')) do
      out[#out + 1] = redis.call('HGET', k.po, t) or ''
    end
    return out, w.n
  end
  local R, v = w.R, redis.call('GET', k.w)
  if v then
    local h = {w = w_token(v), readers = {}}
    h.wopen = w_mode(v) == 2 and redis.call('GET', k.u) ~= h.w
    if holder_blocks(h, R) then out[#out + 1] = w_record(v) end
  end
  if R.cls == 'x' then
    for _, t in ipairs(redis.call('ZRANGEBYSCORE', k.r, '(' .. NOW, '+inf')) do
      if t ~= R.token then out[#out + 1] = redis.call('HGET', k.o, t) or '' end
    end
  end
  for _, e in ipairs(range_entries(k)) do
    if e.state == 'h' and live(k.ge, e.token) then
      out[#out + 1] = redis.call('HGET', k.go, e.token) or ''
    end
  end
  return out, 1
end
local self = live_wait(kind, seq, token, K(KEYS[1]).name, nil)
if not self then return {-1} end
local X = self.id
for _, id in ipairs(redis.call('ZRANGEBYSCORE', DWE, '-inf', NOW)) do redis.call('HDEL', DW, id) end
redis.call('ZREMRANGEBYSCORE', DWE, '-inf', NOW)
redis.call('HSET', DW, X, kind .. ' ' .. seq .. ' ' .. token .. ' ' .. self.name)
redis.call('ZADD', DWE, NOW + ttl, X)
-- E: the index goes on its own once no waiter writes it
redis.call('PEXPIRE', DW, ttl)
redis.call('PEXPIRE', DWE, ttl)
-- THE GRAPH, breadth first from the asker: nodes[id] its wait (false:
-- not waiting), each wait with its holds and the nodes they belong to
local nodes, order = {[X] = self}, {X}
local i = 1
while i <= #order do
  local w = nodes[order[i]]
  if w then
    local recs, need = blockers(w)
    w.need, w.holds = need, {}
    for _, rec in ipairs(recs) do
      local h = {rec = rec, by = {}}
      for _, th in ipairs(threads(rec)) do
        if nodes[th[1]] == nil and #order < NODES then
          nodes[th[1]] = wait_of(th[1]) or false
          order[#order + 1] = th[1]
        end
        if nodes[th[1]] then h.by[#h.by + 1] = th end
      end
      w.holds[#w.holds + 1] = h
    end
  end
  i = i + 1
end
-- KNOTS: the largest closed, strongly connected set of waits around
-- the asker's: drop every wait fewer than `need` of whose holds belong
-- to the rest, then every one the asker's does not reach or that does
-- not reach it, until neither drops one
local inset = {}
for _, id in ipairs(order) do if nodes[id] then inset[id] = true end end
local function held_in(h)
  for _, th in ipairs(h.by) do if inset[th[1]] then return true end end
  return false
end
local function keep_closed()
  local again = true
  while again do
    again = false
    for _, id in ipairs(order) do
      if inset[id] then
        local w, found = nodes[id], 0
        for _, h in ipairs(w.holds) do if held_in(h) then found = found + 1 end end
        if found < w.need then inset[id], again = nil, true end
      end
    end
  end
end
local function reach(forward)
  local seen, again = {[X] = true}, true
  while again do
    again = false
    for _, id in ipairs(order) do
      for _, h in ipairs(inset[id] and nodes[id].holds or {}) do
        for _, th in ipairs(h.by) do
          local a, b = id, th[1]
          if not forward then a, b = b, a end
          if inset[th[1]] and seen[a] and not seen[b] then seen[b], again = true, true end
        end
      end
    end
  end
  return seen
end
repeat
  keep_closed()
  if not inset[X] then return {0} end
  local fwd, back, dropped = reach(true), reach(false), false
  for _, id in ipairs(order) do
    if inset[id] and not (fwd[id] and back[id]) then inset[id], dropped = nil, true end
  end
until not dropped
-- ONE VICTIM: the youngest wait of the knot
local victim, members = self, {}
for _, id in ipairs(order) do
  if inset[id] then
    if nodes[id].seq > victim.seq then victim = nodes[id] end
    if id ~= X then members[#members + 1] = nodes[id].rec or '' end
  end
end
if victim ~= self then
  if redis.call('LLEN', wake_key(victim.token)) == 0 then push(victim.token, 'd', ttl) end
  return {2}
end
redis.call('HSET', DW, X, 'x ' .. seq .. ' ' .. token .. ' ' .. self.name)
-- the story: the shortest cycle through the asker, breadth first
local from, queue, head, last = {[X] = false}, {X}, 1, nil
while head <= #queue and not last do
  local u = queue[head]
  head = head + 1
  for _, h in ipairs(nodes[u].holds) do
    for _, th in ipairs(h.by) do
      if not last and inset[th[1]] then
        if th[1] == X then
          last = {u, h, th[2]}
        elseif from[th[1]] == nil then
          from[th[1]] = {u, h, th[2]}
          queue[#queue + 1] = th[1]
        end
      end
    end
  end
end
local steps, at = {}, last
while at do
  table.insert(steps, 1, {nodes[at[1]].name, at[2].rec, at[3]})
  at = from[at[1]]
end
local out = {1, self.rec, #members + 1, #steps}
for _, s in ipairs(steps) do
  out[#out + 1], out[#out + 2], out[#out + 3] = s[1], s[2], s[3]
end
for _, m in ipairs(members) do out[#out + 1] = m end
return out
