-- DOWNGRADE_INTENT  KEYS: K, {P}   ARGV: token, policy
-- Upgraded intent -> intent: U goes, W stays ours (writers and intents
-- still wait), and the readers U held back are let in.  `simple` keeps U
-- (its intent is exclusive).  1, or 0: lost.
local k, token = K(KEYS[1]), ARGV[1]
purge(k)
if get_w(k) ~= token then return 0 end
if ARGV[2] ~= '3' and redis.call('GET', k.u) == token then redis.call('DEL', k.u) end
grant(k, holders(k), nil)
return 1
