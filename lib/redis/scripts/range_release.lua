-- RANGE_RELEASE  KEYS: K, {P}   ARGV: token
-- Removes exactly this token's entry and record; 1 when it held, LOST
-- when it was gone (DIRLOCK_ELOST).  R3: wakes the
-- waiters whose range met it, and lets in the whole waiters that may go.
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
local e = range_drop(k, token)
if not e then return gone(k) end
range_left(k, e)
return e.state == 'h' and 1 or 0
