/* redis_scripts.c - the Lua scripts of the Redis backend, as C strings.
 * Every change of a lock's state on the server is one of these, run
 * atomically by the server (EVALSHA): one round trip per acquire attempt,
 * per release, per refresh.  The data model (the keys of lock NAME under
 * K = {P}:NAME) is at the top of redis_backend.c; each script below says
 * what it does and the invariant it keeps.
 *
 * KEYS of every script: the bases K of the names it works on, then the
 * space's base {P}.  Only keys under the same hash tag {P} are touched
 * (K:w, K:r, ..., {P}:seq, {P}:names, {P}:wake:<token>), so they all live
 * in the slot of the given keys (Redis Cluster keeps a space in one slot).
 *
 * INVARIANTS the scripts keep together:
 *   M  (mutual exclusion) K:w names at most one holder; while K:w holds a
 *      token whose mode is exclusive or `simple`, or intent with K:u the
 *      same token, K:r holds no live reader that entered after it -- every
 *      take checks the holders in the same script that takes.
 *   E  (expiry) every holder's and waiter's entry expires by the server's
 *      clock after its own stale age (K:w, K:u by PX; K:r, K:qe by score,
 *      purged by every script before it judges), and REFRESH extends it
 *      only while it is still there: a crashed holder's lock frees itself.
 *   Q  (queue order) a waiter keeps the arrival number it drew first
 *      ({P}:seq) in every queue it joins; a waiter is let in only when its
 *      policy lets it pass every waiter ahead of it (see `blocks` below),
 *      and the relation "waits for" between waiters only ever points to a
 *      lower number, or out of a waiter that nobody waits for: no cycle,
 *      so no deadlock, multi-locks included.
 *   W  (wake-up) a script that may have let a waiter in (release, break,
 *      downgrade, a failed last try, an expiry it purged) grants the lock
 *      to every queued single-name waiter that may now go (taking it for
 *      it, drawing its fence) and pushes "g<fence>" to its wake list, or
 *      pushes "w" to a multi-name waiter that may now try; an upgrader
 *      whose readers have drained gets "g".  Nobody else is woken.
 *   F  (fences) K:f only grows: each take draws max(K:f + 1, server time
 *      in microseconds) for every name it takes, in the script that takes;
 *      never past DIRLOCK_FENCE_MAX (a counter at it is refused, so no
 *      fence is drawn twice).
 * Redis does not undo a script's writes when it fails half way, so each
 * script reads (and so type-checks) what it will change, and draws fences
 * and touches hashes before it takes anything: a key of the wrong type or
 * a fence counter that holds no number fails it before a lock is taken. */
#include "redis.h"
#include "test_hooks.h"

#include <stdlib.h>
#include <string.h>

#define DL_REDIS_STR(x)  #x
#define DL_REDIS_XSTR(x) DL_REDIS_STR(x)

/* ---- the common part: clock, keys, purge, holders, queue, grant --------- */

#define COMMON                                                                                               \
        "local B = KEYS[#KEYS]\n"                                                                            \
        "local tm = redis.call('TIME')\n"                                                                    \
        "local NOW = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)\n"                          \
        "local NOW_US = tonumber(tm[1]) * 1000000 + tonumber(tm[2])\n"                                       \
        "local function K(base)\n"                                                                           \
        "  return {w = base .. ':w', u = base .. ':u', r = base .. ':r', q = base .. ':q',\n"                \
        "          qe = base .. ':qe', qm = base .. ':qm', o = base .. ':o', f = base .. ':f',\n"            \
        "          g = base .. ':g', ge = base .. ':ge', go = base .. ':go',\n" \
        "          p = base .. ':p', po = base .. ':po', pn = base .. ':pn', pq = base .. ':pq',\n" \
        "          pqe = base .. ':pqe', pqm = base .. ':pqm',\n" \
        "          name = string.sub(base, #B + 2)}\n"                                                       \
        "end\n"                                                                                              \
        "local function wake_key(t) return B .. ':wake:' .. t end\n"                                         \
        /* LATE (ACQUIRE, RANGE_ACQUIRE): `na` the request's "not after" in */ \
        /* server ms, 0 for none; a queue entry or reservation never outlives it */ \
        "local function past(na) return na > 0 and NOW > na end\n" \
        "local function expiry(ttl, na) return na > 0 and math.min(NOW + ttl, na) or NOW + ttl end\n" \
        "local function push(t, msg, ttl)\n"                                                                 \
        "  redis.call('RPUSH', wake_key(t), msg)\n"                                                          \
        "  redis.call('PEXPIRE', wake_key(t), math.max(ttl, 1))\n"                                           \
        "end\n"                                                                                              \
        /* class: X (exclusive, or any `simple` request), S (shared), I (intent) */                          \
        "local function class(mode, policy)\n"                                                               \
        "  if policy == 3 or mode == 0 then return 'X' end\n"                                                \
        "  if mode == 1 then return 'S' end\n"                                                               \
        "  return 'I'\n"                                                                                     \
        "end\n"                                                                                              \
        "local function request(t, mode, policy, stale, n, qttl, seq)\n"                                     \
        "  return {token = t, mode = mode, policy = policy, cls = class(mode, policy), stale = stale,\n"     \
        "          n = n, qttl = qttl, seq = seq}\n"                                                         \
        "end\n"                                                                                              \
        /* F: the next fence of a name: max(K:f + 1, now in microseconds), at */ \
        /* most FENCE_MAX (2^53 - 1: past it a double cannot count by one); a */ \
        /* counter that is no number, or at the limit, fails the script and */ \
        /* stays as it is */ \
        "local FENCE_MAX = 2^" DL_REDIS_XSTR(DIRLOCK_FENCE_BITS) " - 1\n" \
        "local function draw_fence(k)\n"                                                                     \
        "  local f = NOW_US\n"                                                                               \
        "  local v = redis.call('GET', k.f)\n"                                                               \
        "  if v then\n"                                                                                      \
        "    if not string.match(v, '^%d+$') then\n"                                                         \
        "      error('the fence counter ' .. k.f .. ' held no number: ' .. v)\n"                              \
        "    end\n"                                                                                          \
        "    local last = tonumber(v)\n"                                                                     \
        "    if last >= FENCE_MAX then\n"                                                                    \
        "      error('the fence counter ' .. k.f .. ' is at ' .. v .. ', past the largest fence ' ..\n"       \
        "            string.format('%.0f', FENCE_MAX) .. ': not a counter dirlock wrote')\n"                   \
        "    end\n"                                                                                          \
        "    if last >= f then f = last + 1 end\n"                                                           \
        "  end\n"                                                                                            \
        "  if f > FENCE_MAX then error('the server clock is past the largest fence') end\n"                  \
        "  local s = string.format('%.0f', f)\n"                                                             \
        "  redis.call('SET', k.f, s)\n"                                                                      \
        "  return s\n"                                                                                       \
        "end\n"                                                                                              \
        /* LOST: the answer of a script that found its token's entry gone: */ \
        /* 0 while the lock's fence counter is there (the entry expired or */ \
        /* was broken), GONE (-2) when the server has nothing of the lock */ \
        /* (restarted without its data, flushed, evicted: K:f never expires) */ \
        "local function gone(k) return redis.call('EXISTS', k.f) == 1 and 0 or -2 end\n" \
        /* K:w holds "<token> <record>": the record expires with the lock */                                 \
        "local function w_token(v) return v and string.sub(v, 1, 32) or nil end\n"                           \
        "local function w_record(v) return v and string.sub(v, 34) or '' end\n"                              \
        "local function w_mode(v) return v and tonumber(string.match(v, ' mode=(%d)')) or 0 end\n"           \
        "local function get_w(k) return w_token(redis.call('GET', k.w)) end\n"                               \
        "local function dequeue(k, t)\n"                                                                     \
        "  local gone = redis.call('ZREM', k.q, t)\n"                                                        \
        "  redis.call('ZREM', k.qe, t)\n"                                                                    \
        "  redis.call('HDEL', k.qm, t)\n"                                                                    \
        "  return gone == 1\n"                                                                               \
        "end\n"                                                                                              \
        /* W: the readers are gone: an upgrader waiting for them may go */                                   \
        "local function drained(k)\n"                                                                        \
        "  if redis.call('ZCARD', k.r) > 0 then return end\n"                                                \
        "  local u = redis.call('GET', k.u)\n"                                                               \
        "  if u and u == get_w(k) then push(u, 'g', redis.call('PTTL', k.u)) end\n"                          \
        "end\n"                                                                                              \
        /* RANGES (redis_range.c): the entries of a name, cached in k.gs until */ \
        /* one changes (range_drop, range_set clear it) */ \
        "local function range_entries(k)\n" \
        "  if k.gs then return k.gs end\n" \
        "  local gs, all = {}, redis.call('HGETALL', k.g)\n" \
        "  for i = 1, #all, 2 do\n" \
        "    local st, m, sq, lo, hi, p, ttl =\n" \
        "      string.match(all[i + 1], '^([hw])([sixu]) (%d+) (%S+) (%S+) (%d) (%d+)$')\n" \
        "    if st then\n" \
        "      gs[#gs + 1] = {token = all[i], state = st, mode = m, seq = tonumber(sq), los = lo, his = hi,\n" \
        "                     lo = tonumber(lo), hi = tonumber(hi), policy = tonumber(p), qttl = tonumber(ttl)}\n" \
        "    end\n" \
        "  end\n" \
        "  k.gs = gs\n" \
        "  return gs\n" \
        "end\n" \
        "local function range_find(k, t)\n" \
        "  for _, e in ipairs(range_entries(k)) do if e.token == t then return e end end\n" \
        "  return nil\n" \
        "end\n" \
        "local function range_set(k, t, st, m, seq, los, his, policy, qttl)\n" \
        "  redis.call('HSET', k.g, t, string.format('%s%s %.0f %s %s %d %d', st, m, seq, los, his, policy, qttl))\n" \
        "  k.gs = nil\n" \
        "end\n" \
        "local function overlap(alo, ahi, blo, bhi) return alo < bhi and blo < ahi end\n" \
        /* R3: wake the waiters (and an upgrading holder) whose range meets */ \
        /* [lo, hi), not those that also meet [klo, khi) (still held) */ \
        "local function range_wake(k, lo, hi, klo, khi)\n" \
        "  for _, e in ipairs(range_entries(k)) do\n" \
        "    if (e.state == 'w' or e.mode == 'u') and overlap(e.lo, e.hi, lo, hi) and\n" \
        "       not (klo and overlap(e.lo, e.hi, klo, khi)) and redis.call('LLEN', wake_key(e.token)) == 0 then\n" \
        "      push(e.token, 'w', e.qttl)\n" \
        "    end\n" \
        "  end\n" \
        "end\n" \
        "local function range_drop(k, t)\n" \
        "  local e = range_find(k, t)\n" \
        "  if not e then return nil end\n" \
        "  redis.call('HDEL', k.g, t)\n" \
        "  redis.call('ZREM', k.ge, t)\n" \
        "  redis.call('HDEL', k.go, t)\n" \
        "  k.gs = nil\n" \
        "  return e\n" \
        "end\n" \
        /* E: drop expired readers and waiters with their records.  The zsets */                             \
        /* are scored by expiry, so their first entries say whether any is due. */                           \
        /* Leaves in k: readers (the first two live ones), nq (waiters queued). */                           \
        /* Redis removes a set or hash when it empties: one EXISTS tells that a */                           \
        /* name has no reader, waiter nor range at all (a plain whole lock), */                              \
        /* and then there is nothing to purge and no range entry to read. */                                 \
        "local function purge(k)\n"                                                                          \
        "  if redis.call('EXISTS', k.r, k.q, k.g, k.ge) == 0 then\n"                                         \
        "    k.readers, k.nq, k.gs = {}, 0, {}\n"                                                            \
        "    return false\n"                                                                                 \
        "  end\n"                                                                                            \
        "  local changed = false\n"                                                                          \
        "  local rs = redis.call('ZRANGE', k.r, 0, 1, 'WITHSCORES')\n"                                       \
        "  if #rs > 0 and tonumber(rs[2]) <= NOW then\n"                                                     \
        "    local dead = redis.call('ZRANGEBYSCORE', k.r, '-inf', NOW)\n"                                   \
        "    redis.call('ZREMRANGEBYSCORE', k.r, '-inf', NOW)\n"                                             \
        "    redis.call('HDEL', k.o, unpack(dead))\n"                                                        \
        "    drained(k)\n"                                                                                   \
        "    changed = true\n"                                                                               \
        "    rs = redis.call('ZRANGE', k.r, 0, 1, 'WITHSCORES')\n"                                           \
        "  end\n"                                                                                            \
        "  local gs = redis.call('ZRANGE', k.ge, 0, 0, 'WITHSCORES')\n" \
        "  if #gs > 0 and tonumber(gs[2]) <= NOW then\n" \
        "    local gone = {}\n" \
        "    for _, t in ipairs(redis.call('ZRANGEBYSCORE', k.ge, '-inf', NOW)) do\n" \
        "      gone[#gone + 1] = range_drop(k, t)\n" \
        "    end\n" \
        "    redis.call('ZREMRANGEBYSCORE', k.ge, '-inf', NOW)\n" \
        "    for _, e in ipairs(gone) do range_wake(k, e.lo, e.hi) end\n" \
        "    changed = true\n" \
        "  end\n" \
        "  k.readers = {}\n"                                                                                 \
        "  for i = 1, #rs, 2 do k.readers[#k.readers + 1] = rs[i] end\n"                                     \
        "  k.nq = redis.call('ZCARD', k.q)\n"                                                                \
        "  if k.nq > 0 then\n"                                                                               \
        "    local qs = redis.call('ZRANGEBYSCORE', k.qe, '-inf', NOW)\n"                                    \
        "    if #qs > 0 then\n"                                                                              \
        "      for _, t in ipairs(qs) do dequeue(k, t); redis.call('DEL', wake_key(t)) end\n"                \
        "      redis.call('HDEL', k.o, unpack(qs))\n"                                                        \
        "      changed = true\n"                                                                             \
        "      k.nq = redis.call('ZCARD', k.q)\n"                                                            \
        "    end\n"                                                                                          \
        "  end\n"                                                                                            \
        "  return changed\n"                                                                                 \
        "end\n"                                                                                              \
        /* the holders of a name (after purge): W, whether W lets readers in, */                             \
        /* and up to two readers */                                                                          \
        "local function holders(k)\n"                                                                        \
        "  local v = redis.call('GET', k.w)\n"                                                               \
        "  local h = {w = w_token(v), readers = k.readers}\n"                                                \
        "  if h.w then h.wopen = w_mode(v) == 2 and redis.call('GET', k.u) ~= h.w end\n"                     \
        "  return h\n"                                                                                       \
        "end\n"                                                                                              \
        /* M: the holder that keeps request R out, and its kind, or nil */                                   \
        "local function holder_blocks(h, R)\n"                                                               \
        "  if h.w and h.w ~= R.token and (R.cls ~= 'S' or not h.wopen) then return h.w, 'w' end\n"           \
        "  if R.cls == 'X' then\n"                                                                           \
        "    for _, r in ipairs(h.readers) do if r ~= R.token then return r, 'r' end end\n"                  \
        "  end\n"                                                                                            \
        "  return nil\n"                                                                                     \
        "end\n"                                                                                              \
        /* take for R, whose owner record is `rec` (in K:o while it waited) */                               \
        "local function take(k, h, R, rec)\n"                                                                \
        "  if R.mode == 1 and R.policy ~= 3 then\n"                                                          \
        "    redis.call('HSET', k.o, R.token, rec)\n"                                                        \
        "    redis.call('ZADD', k.r, NOW + R.stale, R.token)\n"                                              \
        "    table.insert(h.readers, R.token)\n"                                                             \
        "  else\n"                                                                                           \
        "    if R.seq then redis.call('HDEL', k.o, R.token) end\n"                                           \
        "    redis.call('SET', k.w, R.token .. ' ' .. rec, 'PX', R.stale)\n"                                 \
        "    h.w = R.token\n"                                                                                \
        "    h.wopen = R.mode == 2 and R.policy ~= 3\n"                                                      \
        "    if R.mode == 2 and R.policy == 3 then redis.call('SET', k.u, R.token, 'PX', R.stale) end\n"     \
        "  end\n"                                                                                            \
        "end\n"                                                                                              \
        "local function load_queue(k)\n"                                                                     \
        "  local ws, toks = {}, {}\n"                                                                        \
        "  if k.nq == 0 then return ws end\n"                                                                \
        "  local q = redis.call('ZRANGE', k.q, 0, -1, 'WITHSCORES')\n"                                       \
        "  for i = 1, #q, 2 do toks[#toks + 1] = q[i] end\n"                                                 \
        "  if #toks == 0 then return ws end\n"                                                               \
        "  local infos = redis.call('HMGET', k.qm, unpack(toks))\n"                                          \
        "  for i, t in ipairs(toks) do\n"                                                                    \
        "    local m, p, s, n, ttl = string.match(infos[i] or '', '^(%d+) (%d+) (%d+) (%d+) (%d+)$')\n"      \
        "    ws[i] = request(t, tonumber(m) or 0, tonumber(p) or 0, tonumber(s) or 1000, tonumber(n) or 1,\n" \
        "                    tonumber(ttl) or 1000, tonumber(q[2 * i]))\n"                                   \
        "  end\n"                                                                                            \
        "  return ws\n"                                                                                      \
        "end\n"                                                                                              \
        /* Q: does waiter A (ahead of B or not) hold request B back?  A gives */                             \
        /* way when it is a `writer` reader (to writers) or a `reader` writer */                             \
        /* (to everyone); B passes waiters when it is a `reader` reader (all) */                             \
        /* or a `writer` writer (readers).  A `writer` reader also waits for   */                            \
        /* every queued writer that does not give way, a `reader` writer for   */                            \
        /* every queued reader that does not.                                  */                            \
        "local function compatible(a, b)\n"                                                                  \
        "  return (a == 'S' and b ~= 'X') or (a == 'I' and b == 'S')\n"                                      \
        "end\n"                                                                                              \
        "local function gives_way(A, B)\n"                                                                   \
        "  return (A.cls == 'S' and A.policy == 1 and B.cls == 'X') or (A.mode == 0 and A.policy == 2)\n"    \
        "end\n"                                                                                              \
        "local function passes(B, A)\n"                                                                      \
        "  return (B.cls == 'S' and B.policy == 2) or (B.mode == 0 and B.policy == 1 and A.cls == 'S')\n"    \
        "end\n"                                                                                              \
        "local function blocks(A, B, ahead)\n"                                                               \
        "  if ahead and not compatible(A.cls, B.cls) and not gives_way(A, B) and not passes(B, A) then\n"    \
        "    return true\n"                                                                                  \
        "  end\n"                                                                                            \
        "  if B.cls == 'S' and B.policy == 1 and A.cls == 'X' and not (A.mode == 0 and A.policy == 2) then\n" \
        "    return true\n"                                                                                  \
        "  end\n"                                                                                            \
        "  return B.mode == 0 and B.policy == 2 and A.cls == 'S' and A.policy ~= 1\n"                        \
        "end\n"                                                                                              \
        "local function queue_blocks(ws, R, gone)\n"                                                         \
        "  for j, A in ipairs(ws) do\n"                                                                      \
        "    if A.token ~= R.token and not gone[j] and blocks(A, R, R.seq == nil or A.seq < R.seq) then\n"   \
        "      return A\n"                                                                                   \
        "    end\n"                                                                                          \
        "  end\n"                                                                                            \
        "  return nil\n"                                                                                     \
        "end\n"                                                                                              \
        /* R2: a held range keeps every whole request out (range waiters do */ \
        /* not: whole waiters go first, as in a directory space) */ \
        "local function range_held(k)\n" \
        "  for _, e in ipairs(range_entries(k)) do\n" \
        "    if e.state == 'h' then return e.token end\n" \
        "  end\n" \
        "  return nil\n" \
        "end\n" \
        /* W: let in whoever may go now, in queue order (not `except`); R3: */ \
        /* unless `quiet`, when no whole holder nor waiter is left, wake the */ \
        /* range waiters */ \
        "local function grant(k, h, except, quiet)\n" \
        "  local ws, gone = load_queue(k), {}\n" \
        "  for i, A in ipairs(ws) do\n" \
        "    if A.token ~= except and not holder_blocks(h, A) and not queue_blocks(ws, A, gone) and\n" \
        "       not range_held(k) then\n" \
        /* (a fence that cannot be drawn: the waiter is woken to try, and */ \
        /* hears why from its own ACQUIRE; the script that grants goes on) */ \
        "      local drew, f = false, nil\n"                                                                 \
        "      if A.n == 1 then drew, f = pcall(draw_fence, k) end\n"                                        \
        "      if drew then\n"                                                                               \
        "        dequeue(k, A.token)\n"                                                                      \
        "        take(k, h, A, redis.call('HGET', k.o, A.token) or '')\n"                                    \
        "        push(A.token, 'g' .. f, A.qttl)\n"                                                          \
        "        gone[i] = true\n"                                                                           \
        "      elseif redis.call('LLEN', wake_key(A.token)) == 0 then\n"                                     \
        "        push(A.token, 'w', A.qttl)\n"                                                               \
        "      end\n"                                                                                        \
        "    end\n"                                                                                          \
        "  end\n"                                                                                            \
        /* k.nq == 0: the purge of this script found none, and none joined since */ \
        "  if not quiet and not h.w and #h.readers == 0 and (k.nq == 0 or redis.call('ZCARD', k.q) == 0) then\n" \
        "    for _, e in ipairs(range_entries(k)) do\n" \
        "      if e.state == 'w' and redis.call('LLEN', wake_key(e.token)) == 0 then\n" \
        "        push(e.token, 'w', e.qttl)\n" \
        "      end\n" \
        "    end\n" \
        "  end\n" \
        "  return ws, gone\n" \
        "end\n"

/* The counting locks' part (redis_permits.c has their protocol), which
 * BREAK, TIDY and the views share with the permit scripts. */
#define PERMIT_COMMON                                                                                        \
        /* PERMITS (redis_permits.c; invariants P, Q there): K:p permit holders by */                        \
        /* expiry, K:po the record of each holder and waiter, K:pn the number of */                          \
        /* permits the holders asked, K:pq waiters by arrival number, K:pqe by */                            \
        /* expiry, K:pqm waiter -> "N stale_ms queue_ttl_ms" */                                              \
        "local function p_dequeue(k, t)\n" \
        "  local was = redis.call('ZREM', k.pq, t)\n" \
        "  redis.call('ZREM', k.pqe, t)\n" \
        "  redis.call('HDEL', k.pqm, t)\n" \
        "  return was == 1\n" \
        "end\n" \
        /* E: drop expired permit holders and waiters with their records; true */ \
        /* when something went (a permit may be free) */ \
        "local function p_purge(k)\n" \
        "  if redis.call('EXISTS', k.p, k.pq) == 0 then return false end\n" \
        "  local dead = redis.call('ZRANGEBYSCORE', k.p, '-inf', NOW)\n" \
        "  if #dead > 0 then\n" \
        "    redis.call('ZREMRANGEBYSCORE', k.p, '-inf', NOW)\n" \
        "    redis.call('HDEL', k.po, unpack(dead))\n" \
        "  end\n" \
        "  local qs = redis.call('ZRANGEBYSCORE', k.pqe, '-inf', NOW)\n" \
        "  for _, t in ipairs(qs) do\n" \
        "    p_dequeue(k, t)\n" \
        "    redis.call('HDEL', k.po, t)\n" \
        "    redis.call('DEL', wake_key(t))\n" \
        "  end\n" \
        "  if redis.call('ZCARD', k.p) == 0 then redis.call('DEL', k.pn) end\n" \
        "  return #dead > 0 or #qs > 0\n" \
        "end\n" \
        /* the permit waiters in arrival order */ \
        "local function p_queue(k)\n" \
        "  local ws = {}\n" \
        "  local q = redis.call('ZRANGE', k.pq, 0, -1, 'WITHSCORES')\n" \
        "  for i = 1, #q, 2 do\n" \
        "    local n, s, ttl = string.match(redis.call('HGET', k.pqm, q[i]) or '', '^(%d+) (%d+) (%d+)$')\n" \
        "    ws[#ws + 1] = {token = q[i], n = tonumber(n) or 1, stale = tonumber(s) or 1000,\n" \
        "                   qttl = tonumber(ttl) or 1000, seq = tonumber(q[i + 1])}\n" \
        "  end\n" \
        "  return ws\n" \
        "end\n" \
        /* P: one more holder of a permit of N (its fence drawn before: F) */ \
        "local function p_take(k, t, n, stale, rec)\n" \
        "  redis.call('ZADD', k.p, NOW + stale, t)\n" \
        "  redis.call('HSET', k.po, t, rec)\n" \
        "  redis.call('SET', k.pn, n)\n" \
        "  redis.call('SADD', B .. ':names', k.name)\n" \
        "end\n" \
        /* W: the permits free now go to the waiters at the head of the queue, in */ \
        /* arrival order, each taken for it with its fence ("g<fence>"); a waiter */ \
        /* that asks another number than the holders (Q) is woken to hear so from */ \
        /* its own attempt, and nobody passes it */ \
        "local function p_grant(k)\n" \
        "  local held = redis.call('ZCARD', k.p)\n" \
        "  local cur = tonumber(redis.call('GET', k.pn) or '')\n" \
        "  for _, A in ipairs(p_queue(k)) do\n" \
        "    if held > 0 and cur and A.n ~= cur then\n" \
        "      if redis.call('LLEN', wake_key(A.token)) == 0 then push(A.token, 'w', A.qttl) end\n" \
        "      return\n" \
        "    end\n" \
        "    if held >= A.n then return end\n" \
        "    local drew, f = pcall(draw_fence, k)\n" \
        "    if not drew then\n" \
        "      if redis.call('LLEN', wake_key(A.token)) == 0 then push(A.token, 'w', A.qttl) end\n" \
        "      return\n" \
        "    end\n" \
        "    p_dequeue(k, A.token)\n" \
        "    p_take(k, A.token, A.n, A.stale, redis.call('HGET', k.po, A.token) or '')\n" \
        "    push(A.token, 'g' .. f, A.qttl)\n" \
        "    held, cur = held + 1, A.n\n" \
        "  end\n" \
        "end\n" \
        /* a permit holder's removal: its record, the count, the grant (W) */ \
        "local function p_drop(k, t)\n" \
        "  if redis.call('ZREM', k.p, t) == 0 then return false end\n" \
        "  redis.call('HDEL', k.po, t)\n" \
        "  if redis.call('ZCARD', k.p) == 0 then redis.call('DEL', k.pn) end\n" \
        "  p_grant(k)\n" \
        "  return true\n" \
        "end\n"

/* ACQUIRE  KEYS: K1..Kn, {P}   ARGV: token, mode, policy, stale ms, record,
 *          may_queue (0/1), seq (0: none yet), last (0/1), not after (server
 *          ms, 0: none), queue ttl ms
 * All or nothing over the n names.  Purges each name, lets in the queued
 * waiters that may go (W), then judges the request against the holders
 * (M) and the waiters (Q).  Free everywhere: takes every name (a holder
 * that asks again, after a lost reply, simply takes it again), leaves the
 * queues, records the owner, draws a fence per name (F): {1, fence...}.
 * Busy: with may_queue and not last, joins the queue of every busy name
 * (and renews it where it already waits) with its one arrival number;
 * else leaves every queue and lets in whoever it held back.  Returns {0,
 * seq, blocker token, blocker record, ms until the blocker's entry
 * expires, index of the busy name, kind w|r|q}.  Its wake list is emptied
 * first: a wake-up older than this judgement means nothing.
 * LATE: run after `not after` (the request sat in a stopped or stalled
 * server while its sender gave up), it takes nothing it does not hold
 * already and leaves every queue, as a last attempt does: kind 'l'.  Its
 * queue entries never outlive `not after` either, so no release grants
 * the lock to a waiter that has given up. */
static const char acquire_src[] =
    COMMON "local token, mode, policy = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"
           "local stale, record = tonumber(ARGV[4]), ARGV[5]\n"
           "local may_queue, seq, last = ARGV[6] == '1', tonumber(ARGV[7]), ARGV[8] == '1'\n"
           "local qttl = tonumber(ARGV[10])\n"
           "local NA = tonumber(ARGV[9]) or 0\n"
           "local n = #KEYS - 1\n"
           "local R = request(token, mode, policy, stale, n, qttl, seq > 0 and seq or nil)\n"
           "if R.seq then redis.call('DEL', wake_key(token)) end\n"
           "local ks, hs, busy, blocker, allours = {}, {}, {}, nil, true\n"
           "for i = 1, n do\n"
           "  local k = K(KEYS[i])\n"
           "  ks[i] = k\n"
           "  local changed = purge(k)\n"
           "  local h = holders(k)\n"
           "  hs[i] = h\n"
           "  local ws, gone = nil, {}\n"
           "  if changed or not h.w or h.wopen then ws, gone = grant(k, h, token, not changed) end\n"
           "  local bt, kind = nil, nil\n"
           /* ours already (a reply was lost, or a grant came meanwhile): take again */
           "  local ours = h.w == token or (#h.readers > 0 and redis.call('ZSCORE', k.r, token))\n"
           "  if not ours then\n"
           "    allours = false\n"
           "    bt, kind = holder_blocks(h, R)\n"
           "    if not bt then\n"
           "      local A = queue_blocks(ws or load_queue(k), R, gone)\n"
           "      if A then bt, kind = A.token, 'q' end\n"
           "    end\n"
           "    if not bt then\n"
           "      local g = range_held(k)\n"
           "      if g then bt, kind = g, 'g' end\n"
           "    end\n"
           "  end\n"
           "  if bt then\n"
           "    busy[i] = true\n"
           "    if not blocker then blocker = {i, bt, kind} end\n"
           "  end\n"
           "end\n"
           "local late = past(NA) and not allours\n"
           "if late then\n"
           "  last = true\n"
           "  blocker = {blocker and blocker[1] or 1, '', 'l'}\n"
           "end\n"
           "if not blocker then\n"
           /* what can fail (a key of the wrong type) before anything is taken */
           "  local out = {1}\n"
           "  for i = 1, n do\n"
           "    out[#out + 1] = draw_fence(ks[i])\n"
           "    redis.call('SADD', B .. ':names', ks[i].name)\n"
           "  end\n"
           "  for i = 1, n do\n"
           "    if R.seq then dequeue(ks[i], token) end\n"
           "    take(ks[i], hs[i], R, record)\n"
           "  end\n"
           "  return out\n"
           "end\n"
           "local bi, bt, kind = blocker[1], blocker[2], blocker[3]\n"
           "local bk = ks[bi]\n"
           "local brec, left\n"
           "if kind == 'l' then\n"
           "  brec, left = '', 0\n"
           "elseif kind == 'w' then\n"
           "  brec, left = w_record(redis.call('GET', bk.w)), redis.call('PTTL', bk.w)\n"
           "elseif kind == 'g' then\n"
           "  brec = redis.call('HGET', bk.go, bt) or ''\n"
           "  left = (tonumber(redis.call('ZSCORE', bk.ge, bt)) or NOW) - NOW\n"
           "elseif kind == 'r' then\n"
           "  brec = redis.call('HGET', bk.o, bt) or ''\n"
           "  left = (tonumber(redis.call('ZSCORE', bk.r, bt)) or NOW) - NOW\n"
           "else\n"
           "  brec = redis.call('HGET', bk.o, bt) or ''\n"
           "  left = (tonumber(redis.call('ZSCORE', bk.qe, bt)) or NOW) - NOW\n"
           "end\n"
           "if left < 0 then left = 0 end\n"
           "if last or not may_queue then\n"
           "  for i = 1, R.seq and n or 0 do\n"
           "    if dequeue(ks[i], token) then\n"
           "      redis.call('HDEL', ks[i].o, token)\n"
           "      grant(ks[i], holders(ks[i]), token)\n"
           "    end\n"
           "  end\n"
           "  return {0, 0, bt, brec, left, bi - 1, kind}\n"
           "end\n"
           "if not R.seq then R.seq = redis.call('INCR', B .. ':seq') end\n"
           "local info = string.format('%d %d %d %d %d', mode, policy, stale, n, qttl)\n"
           "for i = 1, n do\n"
           "  local k = ks[i]\n"
           "  if busy[i] or redis.call('ZSCORE', k.q, token) then\n"
           "    redis.call('ZADD', k.q, R.seq, token)\n"
           "    redis.call('ZADD', k.qe, expiry(qttl, NA), token)\n"
           "    redis.call('HSET', k.qm, token, info)\n"
           "    redis.call('HSET', k.o, token, record)\n"
           "    redis.call('SADD', B .. ':names', k.name)\n"
           "  end\n"
           "end\n"
           "return {0, R.seq, bt, brec, left, bi - 1, kind}\n";

/* RELEASE  KEYS: K, {P}   ARGV: token
 * Removes exactly this token's hold (W with its U, or its reader entry)
 * and its record; nobody else's.  1 when it held; when its entry was
 * gone, LOST: 0 (expired or broken) or -2 (the server has nothing of
 * the lock any more): DIRLOCK_ELOST.
 * Then lets in whoever may go (W): after W, or after the last reader.
 * (A name left without holders stays in {P}:names until cleanup.) */
static const char release_src[] =
    COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
           "purge(k)\n"
           "local v = redis.call('GET', k.w)\n"
           "if w_token(v) == token then\n"
           "  redis.call('DEL', k.w)\n"
           "  if w_mode(v) == 2 and redis.call('GET', k.u) == token then redis.call('DEL', k.u) end\n"
           "  grant(k, {readers = k.readers}, nil)\n"
           "  return 1\n"
           "end\n"
           "if redis.call('ZREM', k.r, token) == 1 then\n"
           "  redis.call('HDEL', k.o, token)\n"
           "  drained(k)\n"
           "  k.readers = redis.call('ZRANGE', k.r, 0, 1)\n"
           "  if #k.readers == 0 then grant(k, holders(k), nil) end\n"
           "  return 1\n"
           "end\n"
           "return gone(k)\n";

/* REFRESH  KEYS: K, {P}   ARGV: token, stale ms
 * E: extends this token's entry to now + stale only while it is there
 * (PEXPIRE of W and U when they hold the token; ZADD XX of its reader
 * entry after the purge removed the expired ones).  1, or LOST. */
static const char refresh_src[] =
    COMMON "local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])\n"
           "purge(k)\n"
           "if get_w(k) == token then\n"
           "  redis.call('PEXPIRE', k.w, stale)\n"
           "  if redis.call('GET', k.u) == token then redis.call('PEXPIRE', k.u, stale) end\n"
           "  return 1\n"
           "end\n"
           "if redis.call('ZSCORE', k.r, token) then\n"
           "  redis.call('ZADD', k.r, 'XX', NOW + stale, token)\n"
           "  return 1\n"
           "end\n"
           "return gone(k)\n";

/* CHECK  KEYS: K, {P}   ARGV: token
 * Read only: 1 while this token holds W or an unexpired reader entry;
 * else LOST. */
static const char check_src[] = COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                                       "if get_w(k) == token then return 1 end\n"
                                       "local s = redis.call('ZSCORE', k.r, token)\n"
                                       "if s and tonumber(s) > NOW then return 1 end\n"
                                       "return gone(k)\n";

/* UPGRADE  KEYS: K, {P}   ARGV: token, stale ms, last (0/1), simple (0/1)
 * Intent -> exclusive.  Only while this token holds W (else lost: {-1},
 * or {-2} when the server has nothing of the lock, as LOST).
 * Sets U (new readers wait for it, M) and renews W and U; {1} when no
 * reader is left, else {0, reader, its record, ms until its entry
 * expires}, and the last reader's release pushes "g" (W).  A failed last
 * try removes U (not for `simple`, whose intent always has it) and lets
 * the readers that U held back in. */
static const char upgrade_src[] = COMMON "local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])\n"
                                         "purge(k)\n"
                                         "if get_w(k) ~= token then return {gone(k) < 0 and -2 or -1} end\n"
                                         "redis.call('SET', k.u, token, 'PX', stale)\n"
                                         "redis.call('PEXPIRE', k.w, stale)\n"
                                         "redis.call('DEL', wake_key(token))\n"
                                         "local rs = redis.call('ZRANGE', k.r, 0, 0, 'WITHSCORES')\n"
                                         "if #rs == 0 then return {1} end\n"
                                         "local rec = redis.call('HGET', k.o, rs[1]) or ''\n"
                                         "local left = math.max(tonumber(rs[2]) - NOW, 0)\n"
                                         "if ARGV[3] == '1' then\n"
                                         "  if ARGV[4] ~= '1' then redis.call('DEL', k.u) end\n"
                                         "  grant(k, holders(k), nil)\n"
                                         "end\n"
                                         "return {0, rs[1], rec, left}\n";

/* DOWNGRADE  KEYS: K, {P}   ARGV: token, stale ms, record, policy
 * Exclusive or intent -> shared, in one step: the reader entry is made
 * before W is let go, so no writer slips in (M).  `simple` keeps W (its
 * readers hold W) and only drops U.  1, or 0: lost. */
static const char downgrade_src[] =
    COMMON "local k, token, stale, record = K(KEYS[1]), ARGV[1], tonumber(ARGV[2]), ARGV[3]\n"
           "purge(k)\n"
           "if get_w(k) ~= token then return 0 end\n"
           "if redis.call('GET', k.u) == token then redis.call('DEL', k.u) end\n"
           "if ARGV[4] == '3' then\n"
           "  redis.call('SET', k.w, token .. ' ' .. record, 'KEEPTTL')\n"
           "  return 1\n"
           "end\n"
           "redis.call('ZADD', k.r, NOW + stale, token)\n"
           "redis.call('HSET', k.o, token, record)\n"
           "redis.call('DEL', k.w)\n"
           "table.insert(k.readers, token)\n"
           "grant(k, holders(k), nil)\n"
           "return 1\n";

/* DOWNGRADE_INTENT  KEYS: K, {P}   ARGV: token, policy
 * Upgraded intent -> intent: U goes, W stays ours (writers and intents
 * still wait), and the readers U held back are let in.  `simple` keeps U
 * (its intent is exclusive).  1, or 0: lost. */
static const char downgrade_intent_src[] =
    COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
           "purge(k)\n"
           "if get_w(k) ~= token then return 0 end\n"
           "if ARGV[2] ~= '3' and redis.call('GET', k.u) == token then redis.call('DEL', k.u) end\n"
           "grant(k, holders(k), nil)\n"
           "return 1\n";

/* BREAK  KEYS: K, {P}   ARGV: token
 * Removes exactly the given token's entries (W, U, reader, waiter, record,
 * wake list): a same-host owner found dead, or `dirlock break --force`.
 * A later holder has another token and is never touched.  1 when it
 * removed something; then lets in whoever may go (W). */
static const char break_src[] =
    COMMON PERMIT_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                         "purge(k)\n"
                         "p_purge(k)\n"
                         "local removed = 0\n"
                         "if get_w(k) == token then redis.call('DEL', k.w); removed = 1 end\n"
                         "if redis.call('GET', k.u) == token then redis.call('DEL', k.u) end\n"
                         "if redis.call('ZREM', k.r, token) == 1 then removed = 1; drained(k) end\n"
                         "k.readers = redis.call('ZRANGE', k.r, 0, 1)\n"
                         "if dequeue(k, token) then removed = 1 end\n"
                         "local g = range_drop(k, token)\n"
                         "if g then removed = 1; range_wake(k, g.lo, g.hi) end\n"
                         "redis.call('DEL', wake_key(token))\n"
                         "redis.call('HDEL', k.o, token)\n"
                         "if removed == 1 then grant(k, holders(k), nil) end\n"
                         /* a permit, or a permit waiter (redis_permits.c) */
                         "if p_drop(k, token) then removed = 1 end\n"
                         "if p_dequeue(k, token) then removed = 1; p_grant(k) end\n"
                         "redis.call('HDEL', k.po, token)\n"
                         "return removed\n";

/* INSPECT  KEYS: K, {P}
 * After the purge: {W's token or '', its record, ms until W expires,
 * 1 when W is upgraded (U), readers, waiters, held ranges}. */
static const char inspect_src[] =
    COMMON "local k = K(KEYS[1])\n"
           "if purge(k) then grant(k, holders(k), nil) end\n"
           "local v = redis.call('GET', k.w)\n"
           "local w, rec, left = w_token(v), w_record(v), 0\n"
           "if w then left = redis.call('PTTL', k.w) end\n"
           "local u = redis.call('GET', k.u)\n"
           "local held = 0\n"
           "for _, e in ipairs(range_entries(k)) do\n"
           "  if e.state == 'h' then held = held + 1 end\n"
           "end\n"
           "return {w or '', rec, left, (w and u == w) and 1 or 0,\n"
           "        redis.call('ZCARD', k.r), redis.call('ZCARD', k.q), held}\n";

/* TIDY  KEYS: K, {P}
 * cleanup, one name: purges it; a name with no holder and no waiter loses
 * its leftovers and leaves {P}:names (its fence counter stays: F) and {}
 * is returned; else every record {token, record, ...} for the caller to
 * judge (same-host dead owners are then removed with BREAK). */
static const char tidy_src[] =
    COMMON PERMIT_COMMON "local k = K(KEYS[1])\n"
                         "if purge(k) then grant(k, holders(k), nil) end\n"
                         "if p_purge(k) then p_grant(k) end\n"
                         "if redis.call('EXISTS', k.w) == 0 and redis.call('ZCARD', k.r) == 0 and\n"
                         "   redis.call('ZCARD', k.q) == 0 and redis.call('EXISTS', k.g) == 0 and\n"
                         "   redis.call('EXISTS', k.p, k.pq) == 0 then\n"
                         "  redis.call('DEL', k.o, k.qm, k.qe, k.u, k.ge, k.go, k.po, k.pn, k.pqe, k.pqm)\n"
                         "  redis.call('SREM', B .. ':names', k.name)\n"
                         "  return {}\n"
                         "end\n"
                         "for _, t in ipairs(redis.call('HKEYS', k.o)) do\n"
                         "  if not redis.call('ZSCORE', k.r, t) and not redis.call('ZSCORE', k.q, t) then\n"
                         "    redis.call('HDEL', k.o, t)\n"
                         "  end\n"
                         "end\n"
                         "for _, t in ipairs(redis.call('HKEYS', k.go)) do\n"
                         "  if redis.call('HEXISTS', k.g, t) == 0 then redis.call('HDEL', k.go, t) end\n"
                         "end\n"
                         "local out = redis.call('HGETALL', k.o)\n"
                         "for _, v in ipairs(redis.call('HGETALL', k.go)) do out[#out + 1] = v end\n"
                         "for _, v in ipairs(redis.call('HGETALL', k.po)) do out[#out + 1] = v end\n"
                         "local v = redis.call('GET', k.w)\n"
                         "if v then out[#out + 1] = w_token(v); out[#out + 1] = w_record(v) end\n"
                         "return out\n";

/* ---- range locks: the protocol and its invariants R1-R5 are at the top of
 * redis_range.c ------------------------------------------------------------ */

/* The range part every range script shares: who conflicts with whom (R1),
 * which waiters ahead hold an acquirer back (R1), and the blocker's
 * record and time left for the answer. */
#define RANGE_COMMON                                                                                         \
        "local function range_conflict(e, ours, policy)\n"                                                   \
        "  if policy == 3 or e.policy == 3 or e.mode == 'x' or ours == 'x' then return true end\n"           \
        "  if e.mode == 's' then return false end\n"                                                         \
        "  if ours == 's' then return e.mode == 'u' end\n"                                                   \
        "  return true\n"                                                                                    \
        "end\n"                                                                                              \
        "local function range_waiter_blocks(e, ours, seq, policy)\n"                                         \
        "  if seq and e.seq >= seq then return false end\n"                                                  \
        "  local they_write, we_write = e.mode ~= 's', ours ~= 's'\n"                                        \
        "  if policy == 1 then return not (we_write and not they_write) end\n"                               \
        "  if policy == 2 then return not (not we_write and they_write) end\n"                               \
        "  return true\n"                                                                                    \
        "end\n"                                                                                              \
        "local function blocker_info(k, bt, kind)\n"                                                         \
        "  local rec, left\n"                                                                                \
        "  if kind == 'w' then\n"                                                                            \
        "    rec, left = w_record(redis.call('GET', k.w)), redis.call('PTTL', k.w)\n"                        \
        "  elseif kind == 'r' then\n"                                                                        \
        "    rec = redis.call('HGET', k.o, bt) or ''\n"                                                      \
        "    left = (tonumber(redis.call('ZSCORE', k.r, bt)) or NOW) - NOW\n"                                \
        "  elseif kind == 'q' then\n"                                                                        \
        "    rec = redis.call('HGET', k.o, bt) or ''\n"                                                      \
        "    left = (tonumber(redis.call('ZSCORE', k.qe, bt)) or NOW) - NOW\n"                               \
        "  else\n"                                                                                           \
        "    rec = redis.call('HGET', k.go, bt) or ''\n"                                                     \
        "    left = (tonumber(redis.call('ZSCORE', k.ge, bt)) or NOW) - NOW\n"                               \
        "  end\n"                                                                                            \
        "  return rec, math.max(left, 0)\n"                                                                  \
        "end\n"                                                                                              \
        "local function range_left(k, e)\n"                                                                  \
        "  range_wake(k, e.lo, e.hi)\n"                                                                      \
        "  if redis.call('ZCARD', k.q) > 0 then grant(k, holders(k), nil, true) end\n"                       \
        "end\n"

/* RANGE_ACQUIRE  KEYS: K, {P}   ARGV: token, mode, policy, stale ms, record,
 *                may_queue (0/1), last (0/1), queue ttl ms, lo, hi, not after
 *                (server ms, 0: none)
 * One attempt at [lo, hi) (the ends as "%.17g": exact).  Purges the name
 * (E), then judges the request (R1, R2): free -> its held entry (keeping
 * its arrival number if it waited), its record, a fence (F): {1, fence};
 * a token that already holds (a lost reply) takes again with a new fence.
 * Busy: with may_queue and not last, its waiting entry (a reservation,
 * with the arrival number it drew first, renewed to now + queue ttl); else
 * its reservation, if any, is withdrawn and whoever it held back is woken
 * (R3).  {0, seq, blocker token, record, ms until it expires, 0, kind
 * w|r|q|g}.  Its wake list is emptied first (a wake-up older than this
 * judgement means nothing).  LATE (run after `not after`, as ACQUIRE): takes
 * nothing it does not hold, withdraws its reservation: kind 'l'; a
 * reservation never outlives `not after`. */

static const char range_acquire_src[] = COMMON RANGE_COMMON
    "local k, token = K(KEYS[1]), ARGV[1]\n"
    "local mode, policy, stale, record = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]\n"
    "local may_queue, last, qttl = ARGV[6] == '1', ARGV[7] == '1', tonumber(ARGV[8])\n"
    "local los, his = ARGV[9], ARGV[10]\n"
    "local NA = tonumber(ARGV[11]) or 0\n"
    "local lo, hi = tonumber(los), tonumber(his)\n"
    "local ours = mode == 1 and 's' or (mode == 2 and 'i' or 'x')\n"
    "redis.call('DEL', wake_key(token))\n"
    "if purge(k) then grant(k, holders(k), nil, true) end\n"
    "local me = range_find(k, token)\n"
    "if me and me.state == 'h' then return {1, draw_fence(k)} end\n"
    "local seq = me and me.seq or nil\n"
    "local bt, kind = nil, nil\n"
    "local h = holders(k)\n"
    "if h.w then\n"
    "  bt, kind = h.w, 'w'\n"
    "elseif #h.readers > 0 then\n"
    "  bt, kind = h.readers[1], 'r'\n"
    "else\n"
    "  local q = redis.call('ZRANGE', k.q, 0, 0)\n"
    "  if #q > 0 then bt, kind = q[1], 'q' end\n"
    "end\n"
    "if not bt then\n"
    "  for _, e in ipairs(range_entries(k)) do\n"
    "    if e.token ~= token and overlap(e.lo, e.hi, lo, hi) and range_conflict(e, ours, policy) and\n"
    "       (e.state == 'h' or range_waiter_blocks(e, ours, seq, policy)) then\n"
    "      bt, kind = e.token, 'g'\n"
    "      break\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if past(NA) then\n"
    "  if me then\n"
    "    range_drop(k, token)\n"
    "    range_left(k, me)\n"
    "  end\n"
    "  return {0, 0, bt or '', '', 0, 0, 'l'}\n"
    "end\n"
    "if not bt then\n"
    "  local f = draw_fence(k)\n"
    "  redis.call('SADD', B .. ':names', k.name)\n"
    "  redis.call('HSET', k.go, token, record)\n"
    "  range_set(k, token, 'h', ours, seq or 0, los, his, policy, qttl)\n"
    "  redis.call('ZADD', k.ge, NOW + stale, token)\n"
    "  return {1, f}\n"
    "end\n"
    "local brec, left = blocker_info(k, bt, kind)\n"
    "if last or not may_queue then\n"
    "  if me then\n"
    "    range_drop(k, token)\n"
    "    range_left(k, me)\n"
    "  end\n"
    "  return {0, 0, bt, brec, left, 0, kind}\n"
    "end\n"
    "if not seq then seq = redis.call('INCR', B .. ':seq') end\n"
    "redis.call('SADD', B .. ':names', k.name)\n"
    "redis.call('HSET', k.go, token, record)\n"
    "range_set(k, token, 'w', ours, seq, los, his, policy, qttl)\n"
    "redis.call('ZADD', k.ge, expiry(qttl, NA), token)\n"
    "return {0, seq, bt, brec, left, 0, kind}\n";

/* RANGE_RELEASE  KEYS: K, {P}   ARGV: token
 * Removes exactly this token's entry and record; 1 when it held, LOST
 * when it was gone (DIRLOCK_ELOST).  R3: wakes the
 * waiters whose range met it, and lets in the whole waiters that may go. */

static const char range_release_src[] = COMMON RANGE_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                                                            "purge(k)\n"
                                                            "local e = range_drop(k, token)\n"
                                                            "if not e then return gone(k) end\n"
                                                            "range_left(k, e)\n"
                                                            "return e.state == 'h' and 1 or 0\n";

/* RANGE_SHRINK  KEYS: K, {P}   ARGV: token, lo, hi, stale ms
 * The held entry becomes [lo, hi) (a part of it: the caller checked) and
 * is renewed; R3: the waiters that met the old range and do not meet the
 * new one are woken at once.  1, or 0: lost. */

static const char range_shrink_src[] =
    COMMON RANGE_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                        "purge(k)\n"
                        "local e = range_find(k, token)\n"
                        "if not e or e.state ~= 'h' then return 0 end\n"
                        "range_set(k, token, 'h', e.mode, e.seq, ARGV[2], ARGV[3], e.policy, e.qttl)\n"
                        "redis.call('ZADD', k.ge, 'XX', NOW + tonumber(ARGV[4]), token)\n"
                        "range_wake(k, e.lo, e.hi, tonumber(ARGV[2]), tonumber(ARGV[3]))\n"
                        "return 1\n";

/* RANGE_REFRESH  KEYS: K, {P}   ARGV: token, stale ms
 * E: extends the held entry to now + stale only while it is there (after
 * the purge removed the expired ones).  1, or LOST. */

static const char range_refresh_src[] =
    COMMON RANGE_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                        "purge(k)\n"
                        "local e = range_find(k, token)\n"
                        "if not e or e.state ~= 'h' then return gone(k) end\n"
                        "redis.call('ZADD', k.ge, 'XX', NOW + tonumber(ARGV[2]), token)\n"
                        "return 1\n";

/* RANGE_CHECK  KEYS: K, {P}   ARGV: token
 * Read only: 1 while this token holds an unexpired range entry; else
 * LOST. */

static const char range_check_src[] =
    COMMON RANGE_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                        "local v = redis.call('HGET', k.g, token)\n"
                        "local s = redis.call('ZSCORE', k.ge, token)\n"
                        "if v and string.sub(v, 1, 1) == 'h' and s and tonumber(s) > NOW then return 1 end\n"
                        "return gone(k)\n";

/* RANGE_UPGRADE  KEYS: K, {P}   ARGV: token, stale ms, last (0/1)
 * Intent range -> exclusive.  Only while this token holds (else {-1} or
 * {-2}: lost, as UPGRADE).
 * The entry becomes u (new overlapping readers and intents wait: R1) and
 * is renewed; {1} (now x) when no overlapping read range is held, else
 * {0, reader, its record, ms until it expires}: the reader's release wakes
 * us (R3).  A failed last try goes back to i and wakes the waiters that u
 * held back. */

static const char range_upgrade_src[] = COMMON RANGE_COMMON
    "local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])\n"
    "purge(k)\n"
    "local e = range_find(k, token)\n"
    "if not e or e.state ~= 'h' then return {gone(k) < 0 and -2 or -1} end\n"
    "redis.call('DEL', wake_key(token))\n"
    "redis.call('ZADD', k.ge, 'XX', NOW + stale, token)\n"
    "for _, r in ipairs(range_entries(k)) do\n"
    "  if r.token ~= token and r.state == 'h' and r.mode == 's' and overlap(r.lo, r.hi, e.lo, e.hi) then\n"
    "    local rec, left = blocker_info(k, r.token, 'g')\n"
    "    if ARGV[3] == '1' then\n"
    "      range_set(k, token, 'h', 'i', e.seq, e.los, e.his, e.policy, e.qttl)\n"
    "      range_wake(k, e.lo, e.hi)\n"
    "    else\n"
    "      range_set(k, token, 'h', 'u', e.seq, e.los, e.his, e.policy, e.qttl)\n"
    "    end\n"
    "    return {0, r.token, rec, left}\n"
    "  end\n"
    "end\n"
    "range_set(k, token, 'h', 'x', e.seq, e.los, e.his, e.policy, e.qttl)\n"
    "return {1}\n";

/* RANGE_DOWNGRADE  KEYS: K, {P}   ARGV: token
 * Exclusive or intent range -> shared, in one step (no writer slips in);
 * R3: wakes the waiters that met it.  1, or 0: lost. */

static const char range_downgrade_src[] =
    COMMON RANGE_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                        "purge(k)\n"
                        "local e = range_find(k, token)\n"
                        "if not e or e.state ~= 'h' then return 0 end\n"
                        "range_set(k, token, 'h', 's', e.seq, e.los, e.his, e.policy, e.qttl)\n"
                        "range_wake(k, e.lo, e.hi)\n"
                        "return 1\n";

/* RANGE_DOWNGRADE_INTENT  KEYS: K, {P}   ARGV: token
 * Upgraded intent range -> intent (i, which readers share); R3: wakes
 * the waiters that met it.  1, or 0: lost. */
static const char range_downgrade_intent_src[] =
    COMMON RANGE_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                        "purge(k)\n"
                        "local e = range_find(k, token)\n"
                        "if not e or e.state ~= 'h' then return 0 end\n"
                        "range_set(k, token, 'h', 'i', e.seq, e.los, e.his, e.policy, e.qttl)\n"
                        "range_wake(k, e.lo, e.hi)\n"
                        "return 1\n";

/* RANGE_LIST  KEYS: K, {P}
 * After the purge: {state and mode ("hx", "ws", "hu", ...), lo, hi, owner
 * record, ...} of every range holder and waiter (dirlock_ranges). */
static const char range_list_src[] =
    COMMON RANGE_COMMON "local k = K(KEYS[1])\n"
                        "if purge(k) then grant(k, holders(k), nil, true) end\n"
                        "local out = {}\n"
                        "for _, e in ipairs(range_entries(k)) do\n"
                        "  out[#out + 1] = e.state .. e.mode\n"
                        "  out[#out + 1] = e.los\n"
                        "  out[#out + 1] = e.his\n"
                        "  out[#out + 1] = redis.call('HGET', k.go, e.token) or ''\n"
                        "end\n"
                        "return out\n";

/* ---- counting locks: the protocol and its invariants P, Q are at the top
 * of redis_permits.c --------------------------------------------------------- */

/* PERMIT_ACQUIRE  KEYS: K, {P}   ARGV: token, N, stale ms, record,
 *                 may_queue (0/1), seq (0: none yet), last (0/1), not after
 *                 (server ms, 0: none), queue ttl ms
 * Purges the name (E) and grants what that freed (W).  A token that holds
 * a permit already takes it again (a lost reply, a grant).  Holders that
 * asked another N: {-3, their N, a holder's record, peers} (Q; nothing
 * taken, the queue left).  Free -- fewer than N holders, counting the
 * waiters that arrived before us (FIFO: nobody passes a waiter) -- takes a
 * permit and draws a fence: {1, fence}.  Busy: queues as ACQUIRE does (or
 * leaves the queue: a try, a last attempt, LATE) and names the holder
 * whose permit expires first (kind p) or the first waiter ahead (q):
 * {0, seq, token, record, ms until it expires, 0, kind, peers}.  `peers`
 * is PEERS (redis_permits.c): {token, record, ...} of the holders whose
 * records give the host of ours (ARGV[4]: host name, boot id, pid
 * namespace), first to expire first, at most DL_REDIS_PEERS_MAX of them
 * (none when LATE). */
#define PEERS_MAX_LUA "local PEERS_MAX = " DL_REDIS_XSTR(DL_REDIS_PEERS_MAX) "\n"
static const char permit_acquire_src[] = COMMON PERMIT_COMMON PEERS_MAX_LUA
    "local function where(rec)\n"
    "  local b, ns = string.match(rec, ' boot=(%S+) pidns=(%d+) ')\n"
    "  local h = string.match(rec, ' host=(.+)$')\n"
    "  return b and h and (b .. ' ' .. ns .. ' ' .. h) or nil\n"
    "end\n"
    "local function p_peers(k, rec)\n"
    "  local here, out = where(rec), {}\n"
    "  if not here then return out end\n"
    "  for _, t in ipairs(redis.call('ZRANGE', k.p, 0, -1)) do\n"
    "    local r = redis.call('HGET', k.po, t) or ''\n"
    "    if where(r) == here then\n"
    "      out[#out + 1] = t\n"
    "      out[#out + 1] = r\n"
    "      if #out >= 2 * PEERS_MAX then break end\n"
    "    end\n"
    "  end\n"
    "  return out\n"
    "end\n"
    "local token, n, stale, record = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]\n"
    "local may_queue, seq, last = ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7] == '1'\n"
    "local NA, qttl = tonumber(ARGV[8]) or 0, tonumber(ARGV[9])\n"
    "local k = K(KEYS[1])\n"
    "if seq > 0 then redis.call('DEL', wake_key(token)) end\n"
    "if p_purge(k) then p_grant(k) end\n"
    "-- ours already (a reply was lost, or a grant came meanwhile): take again\n"
    "if redis.call('ZSCORE', k.p, token) then\n"
    "  local f = draw_fence(k)\n"
    "  redis.call('ZADD', k.p, NOW + stale, token)\n"
    "  p_dequeue(k, token)\n"
    "  return {1, f}\n"
    "end\n"
    "local held = redis.call('ZCARD', k.p)\n"
    "local cur = tonumber(redis.call('GET', k.pn) or '')\n"
    "if held > 0 and cur and cur ~= n then\n"
    "  local h = redis.call('ZRANGE', k.p, 0, 0)\n"
    "  if p_dequeue(k, token) then redis.call('HDEL', k.po, token); p_grant(k) end\n"
    "  return {-3, cur, redis.call('HGET', k.po, h[1]) or '', p_peers(k, record)}\n"
    "end\n"
    "local ahead, first = 0, nil\n"
    "for _, A in ipairs(p_queue(k)) do\n"
    "  if A.token ~= token and (seq == 0 or A.seq < seq) then\n"
    "    ahead = ahead + 1\n"
    "    first = first or A\n"
    "  end\n"
    "end\n"
    "local late = past(NA)\n"
    "if held + ahead < n and not late then\n"
    "  local f = draw_fence(k)\n"
    "  p_dequeue(k, token)\n"
    "  p_take(k, token, n, stale, record)\n"
    "  return {1, f}\n"
    "end\n"
    "local bt, brec, left, kind = '', '', 0, 'l'\n"
    "if late then\n"
    "  last = true\n"
    "elseif held >= n then\n"
    "  local h = redis.call('ZRANGE', k.p, 0, 0, 'WITHSCORES')\n"
    "  bt, brec, left, kind = h[1], redis.call('HGET', k.po, h[1]) or '', tonumber(h[2]) - NOW, 'p'\n"
    "else\n"
    "  bt, kind = first.token, 'q'\n"
    "  brec = redis.call('HGET', k.po, bt) or ''\n"
    "  left = (tonumber(redis.call('ZSCORE', k.pqe, bt)) or NOW) - NOW\n"
    "end\n"
    "if left < 0 then left = 0 end\n"
    "if last or not may_queue then\n"
    "  if p_dequeue(k, token) then redis.call('HDEL', k.po, token); p_grant(k) end\n"
    "  return {0, 0, bt, brec, left, 0, kind, late and {} or p_peers(k, record)}\n"
    "end\n"
    "if seq == 0 then seq = redis.call('INCR', B .. ':seq') end\n"
    "redis.call('ZADD', k.pq, seq, token)\n"
    "redis.call('ZADD', k.pqe, expiry(qttl, NA), token)\n"
    "redis.call('HSET', k.pqm, token, string.format('%d %d %d', n, stale, qttl))\n"
    "redis.call('HSET', k.po, token, record)\n"
    "redis.call('SADD', B .. ':names', k.name)\n"
    "return {0, seq, bt, brec, left, 0, kind, p_peers(k, record)}\n";

/* PERMIT_RELEASE  KEYS: K, {P}   ARGV: token
 * Removes this token's permit and record, and grants the permit freed
 * to the first waiter (W): 1; its permit gone already: LOST. */
static const char permit_release_src[] = COMMON PERMIT_COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                                                              "p_purge(k)\n"
                                                              "if p_drop(k, token) then return 1 end\n"
                                                              "p_grant(k)\n"
                                                              "return gone(k)\n";

/* PERMIT_REFRESH  KEYS: K, {P}   ARGV: token, stale ms
 * E: extends this token's permit while it is there: 1, or LOST. */
static const char permit_refresh_src[] =
    COMMON PERMIT_COMMON "local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])\n"
                         "if p_purge(k) then p_grant(k) end\n"
                         "if redis.call('ZSCORE', k.p, token) then\n"
                         "  redis.call('ZADD', k.p, 'XX', NOW + stale, token)\n"
                         "  return 1\n"
                         "end\n"
                         "return gone(k)\n";

/* PERMIT_CHECK  KEYS: K, {P}   ARGV: token
 * Read only: 1 while this token holds an unexpired permit, else LOST. */
static const char permit_check_src[] = COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                                              "local s = redis.call('ZSCORE', k.p, token)\n"
                                              "if s and tonumber(s) > NOW then return 1 end\n"
                                              "return gone(k)\n";

/* ---- deadlock detection: the protocol and its invariants are at the top
 * of redis_deadlock.c ---------------------------------------------------------- */

/* DEADLOCK  KEYS: K, {P}   ARGV: kind ('q': a whole-lock wait, 'p': a
 *           permit wait), token, arrival number, index ttl ms, the most
 *           threads to read
 * Read only but for the wait index ({P}:dw thread -> "<kind> <seq>
 * <token> <name>", {P}:dwe thread by expiry) and a wake-up.  {-1} when the
 * token does not wait for K under that arrival number (granted, left,
 * expired: E).  Else notes the wait in the index, reads the graph from it
 * and takes the knot around it (KNOTS): {0}, none; {2}, one whose victim
 * (the youngest wait: the highest arrival number) is another thread,
 * which is woken ("d": check now) unless a message waits for it already;
 * or, when the asker is the victim, marks its wait told in the index
 * (kind 'x': followed no more) and answers {1, asker's record, number of
 * threads in the knot, number of steps, then per step of its shortest
 * cycle through the asker the name waited for, the record of the hold in
 * the way and 't' (the hold is its thread's) or 'p' (its partner's) --
 * the last hold being the asker's -- then the wait record of every other
 * thread of the knot}. */
static const char deadlock_src[] = COMMON
    "local kind, token, seq, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local NODES = tonumber(ARGV[5])\n"
    "local DW, DWE = B .. ':dw', B .. ':dwe'\n"
    /* THREADS: the threads a hold belongs to, "host boot pidns pid tid": its */
    /* taker (only with a tid: none for DIRLOCK_NO_DEADLOCK and pending */
    /* acquires) and then its partner's main thread */
    "local function threads(rec)\n"
    "  local out = {}\n"
    "  local host = string.match(rec, ' host=(.*)$')\n"
    "  local pid, boot = string.match(rec, ' pid=(%d+) '), string.match(rec, ' boot=(%S+)')\n"
    "  local ns, tid = string.match(rec, ' pidns=(%d+)'), string.match(rec, ' tid=(%d+)')\n"
    "  if not (host and pid and boot and ns and tid) or tid == '0' then return out end\n"
    "  local base = host .. ' ' .. boot .. ' ' .. ns .. ' '\n"
    "  out[1] = {base .. pid .. ' ' .. tid, 't'}\n"
    "  local partner = string.match(rec, ' partner=(%d+):')\n"
    "  if partner then out[2] = {base .. partner .. ' ' .. partner, 'p'} end\n"
    "  return out\n"
    "end\n"
    "local function live(z, t)\n"
    "  local s = tonumber(redis.call('ZSCORE', z, t))\n"
    "  return s ~= nil and s > NOW\n"
    "end\n"
    /* A WAIT as the server has it: token t queued for `name` under arrival */
    /* number s, its entry unexpired (E), one name only; its thread `id` */
    "local function live_wait(wk, s, t, name, id)\n"
    "  local k = K(B .. ':' .. name)\n"
    "  local w = {k = k, kind = wk, token = t, name = name, seq = s}\n"
    "  if wk == 'q' then\n"
    "    if tonumber(redis.call('ZSCORE', k.q, t)) ~= s or not live(k.qe, t) then return nil end\n"
    "    local m, p, n = string.match(redis.call('HGET', k.qm, t) or '', '^(%d+) (%d+) %d+ (%d+) ')\n"
    "    if not m or n ~= '1' then return nil end\n"
    "    w.R, w.rec = request(t, tonumber(m), tonumber(p), 0, 1, 0, s), redis.call('HGET', k.o, t)\n"
    "  elseif wk == 'p' then\n"
    "    if tonumber(redis.call('ZSCORE', k.pq, t)) ~= s or not live(k.pqe, t) then return nil end\n"
    "    w.n = tonumber(string.match(redis.call('HGET', k.pqm, t) or '', '^(%d+) '))\n"
    "    w.rec = redis.call('HGET', k.po, t)\n"
    "    if not w.n or w.n < 1 then return nil end\n"
    "  else\n"
    "    return nil\n"
    "  end\n"
    "  local th = threads(w.rec or '')\n"
    "  if not th[1] or (id and th[1][1] ~= id) then return nil end\n"
    "  w.id = th[1][1]\n"
    "  return w\n"
    "end\n"
    /* the wait the index names for thread id (kind 'x', told: none) */
    "local function wait_of(id)\n"
    "  local wk, s, t, name = string.match(redis.call('HGET', DW, id) or '', '^(%a) (%d+) (%S+) (.+)$')\n"
    "  if not wk then return nil end\n"
    "  return live_wait(wk, tonumber(s), t, name, id)\n"
    "end\n"
    /* BLOCKERS: the records of the unexpired holds that keep wait w out, */
    /* and how many of them must stay for it to stay out: a whole request */
    /* is kept out by W's holder when holder_blocks says so (M), by every */
    /* reader when it is exclusive, by every held range (R2) -- any one; a */
    /* permit wait by the permits held, while N of them stay (P) */
    "local function blockers(w)\n"
    "  local k, out = w.k, {}\n"
    "  if w.kind == 'p' then\n"
    "    for _, t in ipairs(redis.call('ZRANGEBYSCORE', k.p, '(' .. NOW, '+inf')) do\n"
    "      out[#out + 1] = redis.call('HGET', k.po, t) or ''\n"
    "    end\n"
    "    return out, w.n\n"
    "  end\n"
    "  local R, v = w.R, redis.call('GET', k.w)\n"
    "  if v then\n"
    "    local h = {w = w_token(v), readers = {}}\n"
    "    h.wopen = w_mode(v) == 2 and redis.call('GET', k.u) ~= h.w\n"
    "    if holder_blocks(h, R) then out[#out + 1] = w_record(v) end\n"
    "  end\n"
    "  if R.cls == 'X' then\n"
    "    for _, t in ipairs(redis.call('ZRANGEBYSCORE', k.r, '(' .. NOW, '+inf')) do\n"
    "      if t ~= R.token then out[#out + 1] = redis.call('HGET', k.o, t) or '' end\n"
    "    end\n"
    "  end\n"
    "  for _, e in ipairs(range_entries(k)) do\n"
    "    if e.state == 'h' and live(k.ge, e.token) then\n"
    "      out[#out + 1] = redis.call('HGET', k.go, e.token) or ''\n"
    "    end\n"
    "  end\n"
    "  return out, 1\n"
    "end\n"
    "local self = live_wait(kind, seq, token, K(KEYS[1]).name, nil)\n"
    "if not self then return {-1} end\n"
    "local X = self.id\n"
    "for _, id in ipairs(redis.call('ZRANGEBYSCORE', DWE, '-inf', NOW)) do redis.call('HDEL', DW, id) end\n"
    "redis.call('ZREMRANGEBYSCORE', DWE, '-inf', NOW)\n"
    "redis.call('HSET', DW, X, kind .. ' ' .. seq .. ' ' .. token .. ' ' .. self.name)\n"
    "redis.call('ZADD', DWE, NOW + ttl, X)\n"
    /* E: the index goes on its own once no waiter writes it */
    "redis.call('PEXPIRE', DW, ttl)\n"
    "redis.call('PEXPIRE', DWE, ttl)\n"
    /* THE GRAPH, breadth first from the asker: nodes[id] its wait (false: */
    /* not waiting), each wait with its holds and the nodes they belong to */
    "local nodes, order = {[X] = self}, {X}\n"
    "local i = 1\n"
    "while i <= #order do\n"
    "  local w = nodes[order[i]]\n"
    "  if w then\n"
    "    local recs, need = blockers(w)\n"
    "    w.need, w.holds = need, {}\n"
    "    for _, rec in ipairs(recs) do\n"
    "      local h = {rec = rec, by = {}}\n"
    "      for _, th in ipairs(threads(rec)) do\n"
    "        if nodes[th[1]] == nil and #order < NODES then\n"
    "          nodes[th[1]] = wait_of(th[1]) or false\n"
    "          order[#order + 1] = th[1]\n"
    "        end\n"
    "        if nodes[th[1]] then h.by[#h.by + 1] = th end\n"
    "      end\n"
    "      w.holds[#w.holds + 1] = h\n"
    "    end\n"
    "  end\n"
    "  i = i + 1\n"
    "end\n"
    /* KNOTS: the largest closed, strongly connected set of waits around */
    /* the asker's: drop every wait fewer than `need` of whose holds belong */
    /* to the rest, then every one the asker's does not reach or that does */
    /* not reach it, until neither drops one */
    "local inset = {}\n"
    "for _, id in ipairs(order) do if nodes[id] then inset[id] = true end end\n"
    "local function held_in(h)\n"
    "  for _, th in ipairs(h.by) do if inset[th[1]] then return true end end\n"
    "  return false\n"
    "end\n"
    "local function keep_closed()\n"
    "  local again = true\n"
    "  while again do\n"
    "    again = false\n"
    "    for _, id in ipairs(order) do\n"
    "      if inset[id] then\n"
    "        local w, found = nodes[id], 0\n"
    "        for _, h in ipairs(w.holds) do if held_in(h) then found = found + 1 end end\n"
    "        if found < w.need then inset[id], again = nil, true end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local function reach(forward)\n"
    "  local seen, again = {[X] = true}, true\n"
    "  while again do\n"
    "    again = false\n"
    "    for _, id in ipairs(order) do\n"
    "      for _, h in ipairs(inset[id] and nodes[id].holds or {}) do\n"
    "        for _, th in ipairs(h.by) do\n"
    "          local a, b = id, th[1]\n"
    "          if not forward then a, b = b, a end\n"
    "          if inset[th[1]] and seen[a] and not seen[b] then seen[b], again = true, true end\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  return seen\n"
    "end\n"
    "repeat\n"
    "  keep_closed()\n"
    "  if not inset[X] then return {0} end\n"
    "  local fwd, back, dropped = reach(true), reach(false), false\n"
    "  for _, id in ipairs(order) do\n"
    "    if inset[id] and not (fwd[id] and back[id]) then inset[id], dropped = nil, true end\n"
    "  end\n"
    "until not dropped\n"
    /* ONE VICTIM: the youngest wait of the knot */
    "local victim, members = self, {}\n"
    "for _, id in ipairs(order) do\n"
    "  if inset[id] then\n"
    "    if nodes[id].seq > victim.seq then victim = nodes[id] end\n"
    "    if id ~= X then members[#members + 1] = nodes[id].rec or '' end\n"
    "  end\n"
    "end\n"
    "if victim ~= self then\n"
    "  if redis.call('LLEN', wake_key(victim.token)) == 0 then push(victim.token, 'd', ttl) end\n"
    "  return {2}\n"
    "end\n"
    "redis.call('HSET', DW, X, 'x ' .. seq .. ' ' .. token .. ' ' .. self.name)\n"
    /* the story: the shortest cycle through the asker, breadth first */
    "local from, queue, head, last = {[X] = false}, {X}, 1, nil\n"
    "while head <= #queue and not last do\n"
    "  local u = queue[head]\n"
    "  head = head + 1\n"
    "  for _, h in ipairs(nodes[u].holds) do\n"
    "    for _, th in ipairs(h.by) do\n"
    "      if not last and inset[th[1]] then\n"
    "        if th[1] == X then\n"
    "          last = {u, h, th[2]}\n"
    "        elseif from[th[1]] == nil then\n"
    "          from[th[1]] = {u, h, th[2]}\n"
    "          queue[#queue + 1] = th[1]\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "local steps, at = {}, last\n"
    "while at do\n"
    "  table.insert(steps, 1, {nodes[at[1]].name, at[2].rec, at[3]})\n"
    "  at = from[at[1]]\n"
    "end\n"
    "local out = {1, self.rec, #members + 1, #steps}\n"
    "for _, s in ipairs(steps) do\n"
    "  out[#out + 1], out[#out + 2], out[#out + 3] = s[1], s[2], s[3]\n"
    "end\n"
    "for _, m in ipairs(members) do out[#out + 1] = m end\n"
    "return out\n";

/* ---- the views: who holds and who waits (redis_backend.c) -------------------- */

/* HOLDERS  KEYS: K, {P}
 * After the purges: the last fence drawn for the name ('0': none), then
 * five fields per holder -- kind (w: W's holder, r: a reader, p: a
 * permit), token, owner record, ms until its entry expires, the N of a
 * permit (else 0).  Ranges are dirlock_ranges'. */
static const char holders_src[] = COMMON PERMIT_COMMON
    "local k = K(KEYS[1])\n"
    "if purge(k) then grant(k, holders(k), nil) end\n"
    "if p_purge(k) then p_grant(k) end\n"
    "local out = {redis.call('GET', k.f) or '0'}\n"
    "local function add(kind, t, rec, left, n)\n"
    "  for _, x in ipairs({kind, t, rec, math.max(left, 0), n}) do out[#out + 1] = x end\n"
    "end\n"
    "local v = redis.call('GET', k.w)\n"
    "if v then add('w', w_token(v), w_record(v), redis.call('PTTL', k.w), 0) end\n"
    "local rs = redis.call('ZRANGE', k.r, 0, -1, 'WITHSCORES')\n"
    "for i = 1, #rs, 2 do add('r', rs[i], redis.call('HGET', k.o, rs[i]) or '', tonumber(rs[i + 1]) - NOW, "
    "0) end\n"
    "local pn = tonumber(redis.call('GET', k.pn) or '') or 0\n"
    "local ps = redis.call('ZRANGE', k.p, 0, -1, 'WITHSCORES')\n"
    "for i = 1, #ps, 2 do add('p', ps[i], redis.call('HGET', k.po, ps[i]) or '', tonumber(ps[i + 1]) - NOW, "
    "pn) end\n"
    "return out\n";

/* WAITERS  KEYS: K, {P}
 * After the purges: eight fields per waiter -- kind (q: a whole-lock
 * waiter, u: W's holder upgrading while readers are in, g: a range
 * waiter, G: a range upgrading, P: a permit waiter), token, owner record
 * (its acquire time is when the wait began), mode (a number, or a range's
 * letter), arrival number, a range's bounds, a permit waiter's N. */
static const char waiters_src[] = COMMON PERMIT_COMMON
    "local k = K(KEYS[1])\n"
    "if purge(k) then grant(k, holders(k), nil) end\n"
    "if p_purge(k) then p_grant(k) end\n"
    "local out = {}\n"
    "local function add(kind, t, rec, mode, seq, lo, hi, n)\n"
    "  for _, x in ipairs({kind, t, rec, mode, seq, lo, hi, n}) do out[#out + 1] = x end\n"
    "end\n"
    "local q = redis.call('ZRANGE', k.q, 0, -1, 'WITHSCORES')\n"
    "for i = 1, #q, 2 do\n"
    "  local m = string.match(redis.call('HGET', k.qm, q[i]) or '', '^(%d+) ') or '0'\n"
    "  add('q', q[i], redis.call('HGET', k.o, q[i]) or '', m, q[i + 1], '', '', 0)\n"
    "end\n"
    "local v = redis.call('GET', k.w)\n"
    "if v and redis.call('GET', k.u) == w_token(v) and redis.call('ZCARD', k.r) > 0 then\n"
    "  add('u', w_token(v), w_record(v), '0', 0, '', '', 0)\n"
    "end\n"
    "for _, e in ipairs(range_entries(k)) do\n"
    "  if e.state == 'w' then\n"
    "    add('g', e.token, redis.call('HGET', k.go, e.token) or '', e.mode, e.seq, e.los, e.his, 0)\n"
    "  elseif e.mode == 'u' then\n"
    "    add('G', e.token, redis.call('HGET', k.go, e.token) or '', 'x', e.seq, e.los, e.his, 0)\n"
    "  end\n"
    "end\n"
    "local pq = redis.call('ZRANGE', k.pq, 0, -1, 'WITHSCORES')\n"
    "for i = 1, #pq, 2 do\n"
    "  local n = string.match(redis.call('HGET', k.pqm, pq[i]) or '', '^(%d+) ') or '0'\n"
    "  add('P', pq[i], redis.call('HGET', k.po, pq[i]) or '', '0', pq[i + 1], '', '', tonumber(n))\n"
    "end\n"
    "return out\n";

#ifdef DIRLOCK_TEST_HOOKS
/* Test builds only (tests/tests.mk): an ACQUIRE that takes without
 * looking -- every request enters as a reader would -- so that a test can
 * show its checker catching a lock that does not exclude. */
static const char no_lock_acquire_src[] =
    COMMON "local out = {1}\n"
           "for i = 1, #KEYS - 1 do\n"
           "  local k = K(KEYS[i])\n"
           "  redis.call('ZADD', k.r, NOW + tonumber(ARGV[4]), ARGV[1])\n"
           "  redis.call('HSET', k.o, ARGV[1], ARGV[5])\n"
           "  out[#out + 1] = draw_fence(k)\n"
           "end\n"
           "return out\n";
#endif

static const struct {
        const char *name;
        const char *src;
} scripts[DL_RS_COUNT] = {
    [DL_RS_ACQUIRE] = {"acquire", acquire_src},
    [DL_RS_RELEASE] = {"release", release_src},
    [DL_RS_REFRESH] = {"refresh", refresh_src},
    [DL_RS_CHECK] = {"check", check_src},
    [DL_RS_UPGRADE] = {"upgrade", upgrade_src},
    [DL_RS_DOWNGRADE] = {"downgrade", downgrade_src},
    [DL_RS_DOWNGRADE_INTENT] = {"downgrade to intent", downgrade_intent_src},
    [DL_RS_BREAK] = {"break", break_src},
    [DL_RS_INSPECT] = {"inspect", inspect_src},
    [DL_RS_TIDY] = {"tidy", tidy_src},
    [DL_RS_RANGE_ACQUIRE] = {"range acquire", range_acquire_src},
    [DL_RS_RANGE_RELEASE] = {"range release", range_release_src},
    [DL_RS_RANGE_SHRINK] = {"range shrink", range_shrink_src},
    [DL_RS_RANGE_REFRESH] = {"range refresh", range_refresh_src},
    [DL_RS_RANGE_CHECK] = {"range check", range_check_src},
    [DL_RS_RANGE_UPGRADE] = {"range upgrade", range_upgrade_src},
    [DL_RS_RANGE_DOWNGRADE] = {"range downgrade", range_downgrade_src},
    [DL_RS_RANGE_DOWNGRADE_INTENT] = {"range downgrade to intent", range_downgrade_intent_src},
    [DL_RS_RANGE_LIST] = {"range list", range_list_src},
    [DL_RS_PERMIT_ACQUIRE] = {"permit acquire", permit_acquire_src},
    [DL_RS_PERMIT_RELEASE] = {"permit release", permit_release_src},
    [DL_RS_PERMIT_REFRESH] = {"permit refresh", permit_refresh_src},
    [DL_RS_PERMIT_CHECK] = {"permit check", permit_check_src},
    [DL_RS_HOLDERS] = {"holders", holders_src},
    [DL_RS_WAITERS] = {"waiters", waiters_src},
    [DL_RS_DEADLOCK] = {"deadlock", deadlock_src},
};

const char *dl_redis_script_source(dl_redis_script_id id)
{
#ifdef DIRLOCK_TEST_HOOKS
        if (id == DL_RS_ACQUIRE && dl_test_hook(REDIS_NO_LOCK) != NULL)
                return no_lock_acquire_src;
#endif
        return scripts[id].src;
}

const char *dl_redis_script_name(dl_redis_script_id id)
{
        return scripts[id].name;
}
