-- RANGE_DOWNGRADE  KEYS: K, {P}   ARGV: token
-- Exclusive or intent range -> shared, in one step (no writer slips in);
-- R3: wakes the waiters that met it.  1, or 0: lost.
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
local e = range_find(k, token)
if not e or e.state ~= 'h' then return 0 end
range_set(k, token, 'h', 's', e.seq, e.los, e.his, e.policy, e.qttl)
range_wake(k, e.lo, e.hi)
return 1
