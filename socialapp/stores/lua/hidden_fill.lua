-- KEYS[1]: a reader's hidden accounts (zset); KEYS[2]: its change counter (same hash tag).
-- ARGV[1]: the counter read before MongoDB was asked; ARGV[2]: TTL (s); ARGV[3..]: score,
-- member pairs. Replace the set only if no block or mute changed it since: otherwise what
-- was loaded may be stale, and the caller loads again.
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
for first = 3, #ARGV, 1000 do
  redis.call('ZADD', KEYS[1], unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
