-- KEYS: pairs of a tag's day counters, its uses (a counter) then its accounts (a
-- HyperLogLog). Answers each pair's uses and distinct accounts, in order (0 where missing).
-- PFCOUNT is read in a script because a cluster pipeline refuses it (it may name several keys).
local counts = {}
for i = 1, #KEYS, 2 do
  counts[#counts + 1] = tonumber(redis.call('GET', KEYS[i])) or 0
  counts[#counts + 1] = redis.call('PFCOUNT', KEYS[i + 1])
end
return counts
