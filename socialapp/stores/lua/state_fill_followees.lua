-- KEYS[1]: a reader's followee set; KEYS[2]: its change counter (same hash tag).
-- ARGV[1]: the counter read before MongoDB was asked; ARGV[2]: TTL (s); ARGV[3..]: members.
-- Fill the set only if no follow or unfollow changed it since: otherwise what was loaded may
-- be stale, and the caller loads again.
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then
  return 0
end
for first = 3, #ARGV, 1000 do
  redis.call('SADD', KEYS[1], unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
