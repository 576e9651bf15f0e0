-- Test builds only (tests/tests.mk): an ACQUIRE that takes without
-- looking -- every request enters as a reader would -- so that a test can
-- show its checker catching a lock that does not exclude.
local out = {1}
for i = 1, #KEYS - 1 do
  local k = K(KEYS[i])
  redis.call('ZADD', k.r, NOW + tonumber(ARGV[4]), ARGV[1])
  redis.call('HSET', k.o, ARGV[1], ARGV[5])
  out[#out + 1] = draw_fence(k)
end
return out
