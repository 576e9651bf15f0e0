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
 *      in microseconds) for every name it takes, in the script that takes.
 * Redis does not undo a script's writes when it fails half way, so each
 * script reads (and so type-checks) what it will change, and draws fences
 * and touches hashes before it takes anything: a key of the wrong type or
 * a fence counter that holds no number fails it before a lock is taken. */
#include "redis.h"

#include <stdlib.h>
#include <string.h>

/* ---- the common part: clock, keys, purge, holders, queue, grant --------- */

#define COMMON                                                                                               \
        "local B = KEYS[#KEYS]\n"                                                                            \
        "local tm = redis.call('TIME')\n"                                                                    \
        "local NOW = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)\n"                          \
        "local NOW_US = tonumber(tm[1]) * 1000000 + tonumber(tm[2])\n"                                       \
        "local function K(base)\n"                                                                           \
        "  return {w = base .. ':w', u = base .. ':u', r = base .. ':r', q = base .. ':q',\n"                \
        "          qe = base .. ':qe', qm = base .. ':qm', o = base .. ':o', f = base .. ':f',\n"            \
        "          name = string.sub(base, #B + 2)}\n"                                                       \
        "end\n"                                                                                              \
        "local function wake_key(t) return B .. ':wake:' .. t end\n"                                         \
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
        /* F: the next fence of a name: max(K:f + 1, now in microseconds) */                                 \
        "local function draw_fence(k)\n"                                                                     \
        "  local s = string.format('%.0f', NOW_US)\n"                                                        \
        "  local v = redis.call('SET', k.f, s, 'GET')\n"                                                     \
        "  if v then\n"                                                                                      \
        "    local last = tonumber(v)\n"                                                                     \
        "    if not last then error('the fence counter ' .. k.f .. ' held no number: ' .. v) end\n"          \
        "    if last >= NOW_US then\n"                                                                       \
        "      s = string.format('%.0f', last + 1)\n"                                                        \
        "      redis.call('SET', k.f, s)\n"                                                                  \
        "    end\n"                                                                                          \
        "  end\n"                                                                                            \
        "  return s\n"                                                                                       \
        "end\n"                                                                                              \
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
        /* E: drop expired readers and waiters with their records.  The zsets */                             \
        /* are scored by expiry, so their first entries say whether any is due. */                           \
        /* Leaves in k: readers (the first two live ones), nq (waiters queued). */                           \
        "local function purge(k)\n"                                                                          \
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
        /* W: let in whoever may go now, in queue order (not `except`) */                                    \
        "local function grant(k, h, except)\n"                                                               \
        "  local ws, gone = load_queue(k), {}\n"                                                             \
        "  for i, A in ipairs(ws) do\n"                                                                      \
        "    if A.token ~= except and not holder_blocks(h, A) and not queue_blocks(ws, A, gone) then\n"      \
        "      if A.n == 1 then\n"                                                                           \
        "        local f = draw_fence(k)\n"                                                                  \
        "        dequeue(k, A.token)\n"                                                                      \
        "        take(k, h, A, redis.call('HGET', k.o, A.token) or '')\n"                                    \
        "        push(A.token, 'g' .. f, A.qttl)\n"                                                          \
        "        gone[i] = true\n"                                                                           \
        "      elseif redis.call('LLEN', wake_key(A.token)) == 0 then\n"                                     \
        "        push(A.token, 'w', A.qttl)\n"                                                               \
        "      end\n"                                                                                        \
        "    end\n"                                                                                          \
        "  end\n"                                                                                            \
        "  return ws, gone\n"                                                                                \
        "end\n"

/* ACQUIRE  KEYS: K1..Kn, {P}   ARGV: token, mode, policy, stale ms, record,
 *          may_queue (0/1), seq (0: none yet), last (0/1), unused, queue ttl ms
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
 * first: a wake-up older than this judgement means nothing. */
static const char acquire_src[] =
    COMMON "local token, mode, policy = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"
           "local stale, record = tonumber(ARGV[4]), ARGV[5]\n"
           "local may_queue, seq, last = ARGV[6] == '1', tonumber(ARGV[7]), ARGV[8] == '1'\n"
           "local qttl = tonumber(ARGV[10])\n"
           "local n = #KEYS - 1\n"
           "local R = request(token, mode, policy, stale, n, qttl, seq > 0 and seq or nil)\n"
           "if R.seq then redis.call('DEL', wake_key(token)) end\n"
           "local ks, hs, busy, blocker = {}, {}, {}, nil\n"
           "for i = 1, n do\n"
           "  local k = K(KEYS[i])\n"
           "  ks[i] = k\n"
           "  local changed = purge(k)\n"
           "  local h = holders(k)\n"
           "  hs[i] = h\n"
           "  local ws, gone = nil, {}\n"
           "  if changed or not h.w or h.wopen then ws, gone = grant(k, h, token) end\n"
           "  local bt, kind = nil, nil\n"
           /* ours already (a reply was lost, or a grant came meanwhile): take again */
           "  local ours = h.w == token or (#h.readers > 0 and redis.call('ZSCORE', k.r, token))\n"
           "  if not ours then\n"
           "    bt, kind = holder_blocks(h, R)\n"
           "    if not bt then\n"
           "      local A = queue_blocks(ws or load_queue(k), R, gone)\n"
           "      if A then bt, kind = A.token, 'q' end\n"
           "    end\n"
           "  end\n"
           "  if bt then\n"
           "    busy[i] = true\n"
           "    if not blocker then blocker = {i, bt, kind} end\n"
           "  end\n"
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
           "if kind == 'w' then\n"
           "  brec, left = w_record(redis.call('GET', bk.w)), redis.call('PTTL', bk.w)\n"
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
           "    redis.call('ZADD', k.qe, NOW + qttl, token)\n"
           "    redis.call('HSET', k.qm, token, info)\n"
           "    redis.call('HSET', k.o, token, record)\n"
           "    redis.call('SADD', B .. ':names', k.name)\n"
           "  end\n"
           "end\n"
           "return {0, R.seq, bt, brec, left, bi - 1, kind}\n";

/* RELEASE  KEYS: K, {P}   ARGV: token
 * Removes exactly this token's hold (W with its U, or its reader entry)
 * and its record; nobody else's.  1 when it held, 0 when its entry was
 * gone (expired, broken, or the server lost its data): DIRLOCK_ELOST.
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
           "return 0\n";

/* REFRESH  KEYS: K, {P}   ARGV: token, stale ms
 * E: extends this token's entry to now + stale only while it is there
 * (PEXPIRE of W and U when they hold the token; ZADD XX of its reader
 * entry after the purge removed the expired ones).  1, or 0: lost. */
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
           "return 0\n";

/* CHECK  KEYS: K, {P}   ARGV: token
 * Read only: 1 while this token holds W or an unexpired reader entry. */
static const char check_src[] = COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
                                       "if get_w(k) == token then return 1 end\n"
                                       "local s = redis.call('ZSCORE', k.r, token)\n"
                                       "if s and tonumber(s) > NOW then return 1 end\n"
                                       "return 0\n";

/* UPGRADE  KEYS: K, {P}   ARGV: token, stale ms, last (0/1), simple (0/1)
 * Intent -> exclusive.  Only while this token holds W (else {-1}: lost).
 * Sets U (new readers wait for it, M) and renews W and U; {1} when no
 * reader is left, else {0, reader, its record, ms until its entry
 * expires}, and the last reader's release pushes "g" (W).  A failed last
 * try removes U (not for `simple`, whose intent always has it) and lets
 * the readers that U held back in. */
static const char upgrade_src[] = COMMON "local k, token, stale = K(KEYS[1]), ARGV[1], tonumber(ARGV[2])\n"
                                         "purge(k)\n"
                                         "if get_w(k) ~= token then return {-1} end\n"
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

/* BREAK  KEYS: K, {P}   ARGV: token
 * Removes exactly the given token's entries (W, U, reader, waiter, record,
 * wake list): a same-host owner found dead, or `dirlock break --force`.
 * A later holder has another token and is never touched.  1 when it
 * removed something; then lets in whoever may go (W). */
static const char break_src[] =
    COMMON "local k, token = K(KEYS[1]), ARGV[1]\n"
           "purge(k)\n"
           "local removed = 0\n"
           "if get_w(k) == token then redis.call('DEL', k.w); removed = 1 end\n"
           "if redis.call('GET', k.u) == token then redis.call('DEL', k.u) end\n"
           "if redis.call('ZREM', k.r, token) == 1 then removed = 1; drained(k) end\n"
           "k.readers = redis.call('ZRANGE', k.r, 0, 1)\n"
           "if dequeue(k, token) then removed = 1 end\n"
           "redis.call('DEL', wake_key(token))\n"
           "redis.call('HDEL', k.o, token)\n"
           "if removed == 1 then grant(k, holders(k), nil) end\n"
           "return removed\n";

/* INSPECT  KEYS: K, {P}
 * After the purge: {W's token or '', its record, ms until W expires,
 * 1 when W is upgraded (U), readers, waiters}. */
static const char inspect_src[] = COMMON "local k = K(KEYS[1])\n"
                                         "if purge(k) then grant(k, holders(k), nil) end\n"
                                         "local v = redis.call('GET', k.w)\n"
                                         "local w, rec, left = w_token(v), w_record(v), 0\n"
                                         "if w then left = redis.call('PTTL', k.w) end\n"
                                         "local u = redis.call('GET', k.u)\n"
                                         "return {w or '', rec, left, (w and u == w) and 1 or 0,\n"
                                         "        redis.call('ZCARD', k.r), redis.call('ZCARD', k.q)}\n";

/* TIDY  KEYS: K, {P}
 * cleanup, one name: purges it; a name with no holder and no waiter loses
 * its leftovers and leaves {P}:names (its fence counter stays: F) and {}
 * is returned; else every record {token, record, ...} for the caller to
 * judge (same-host dead owners are then removed with BREAK). */
static const char tidy_src[] =
    COMMON "local k = K(KEYS[1])\n"
           "if purge(k) then grant(k, holders(k), nil) end\n"
           "if redis.call('EXISTS', k.w) == 0 and redis.call('ZCARD', k.r) == 0 and\n"
           "   redis.call('ZCARD', k.q) == 0 then\n"
           "  redis.call('DEL', k.o, k.qm, k.qe, k.u)\n"
           "  redis.call('SREM', B .. ':names', k.name)\n"
           "  return {}\n"
           "end\n"
           "for _, t in ipairs(redis.call('HKEYS', k.o)) do\n"
           "  if not redis.call('ZSCORE', k.r, t) and not redis.call('ZSCORE', k.q, t) then\n"
           "    redis.call('HDEL', k.o, t)\n"
           "  end\n"
           "end\n"
           "local out = redis.call('HGETALL', k.o)\n"
           "local v = redis.call('GET', k.w)\n"
           "if v then out[#out + 1] = w_token(v); out[#out + 1] = w_record(v) end\n"
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
    [DL_RS_ACQUIRE] = {"acquire", acquire_src}, [DL_RS_RELEASE] = {"release", release_src},
    [DL_RS_REFRESH] = {"refresh", refresh_src}, [DL_RS_CHECK] = {"check", check_src},
    [DL_RS_UPGRADE] = {"upgrade", upgrade_src}, [DL_RS_DOWNGRADE] = {"downgrade", downgrade_src},
    [DL_RS_BREAK] = {"break", break_src},       [DL_RS_INSPECT] = {"inspect", inspect_src},
    [DL_RS_TIDY] = {"tidy", tidy_src},
};

const char *dl_redis_script_source(dl_redis_script_id id)
{
#ifdef DIRLOCK_TEST_HOOKS
        if (id == DL_RS_ACQUIRE && getenv("DIRLOCK_TEST_REDIS_NO_LOCK") != NULL)
                return no_lock_acquire_src;
#endif
        return scripts[id].src;
}

const char *dl_redis_script_name(dl_redis_script_id id)
{
        return scripts[id].name;
}
