-- PERMIT_RELEASE  KEYS: K, {P}   ARGV: token
-- Removes this token's permit and record, and grants the permit freed
-- to the first waiter (W): 1; its permit gone already: LOST.
local k, token = K(KEYS[1]), ARGV[1]
p_purge(k)
if p_drop(k, token) then return 1 end
p_grant(k)
return gone(k)
