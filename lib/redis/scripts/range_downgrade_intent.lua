-- RANGE_DOWNGRADE_INTENT  KEYS: K, {P}   ARGV: token
-- Upgraded intent range -> intent (i, which readers share); R3: wakes
-- the waiters that met it.  1, or 0: lost.
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
local e = range_find(k, token)
if not e or e.state ~= 'h' then return 0 end
range_set(k, token, 'h', 'i', e.seq, e.los, e.his, e.policy, e.qttl)
range_wake(k, e.lo, e.hi)
return 1
