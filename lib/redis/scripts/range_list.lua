-- RANGE_LIST  KEYS: K, {P}
-- After the purge: {state and mode ("hx", "ws", "hu", ...), lo, hi, owner
-- record, ...} of every range holder and waiter (dirlock_ranges).
local k = K(KEYS[1])
if purge(k) then grant(k, holders(k), nil, true) end
local out = {}
for _, e in ipairs(range_entries(k)) do
  out[#out + 1] = e.state .. e.mode
  out[#out + 1] = e.los
  out[#out + 1] = e.his
  out[#out + 1] = redis.call('HGET', k.go, e.token) or ''
end
return out
