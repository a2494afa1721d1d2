-- KEYS[1]: a ranking (zset member -> log-score). ARGV[1]: the log of each event's weight
-- at its time (ln(weight) + t * ln2 / half-life); ARGV[2]: the log-score below which a
-- member is dropped (it has decayed below the floor by now); ARGV[3]: members kept at most;
-- ARGV[4]: the ranking's TTL (s); ARGV[5..]: the members that had an event.
-- A member's score is ln(sum of weight * 2^(t / half-life)) over its events: adding one is
-- a log-add-exp, so scores never overflow and compare at any time as the decayed sums do.
local add = tonumber(ARGV[1])
for i = 5, #ARGV do
  local old = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]))
  local new = add
  if old then
    local high, low = math.max(old, add), math.min(old, add)
    new = high + math.log(1 + math.exp(low - high))
  end
  redis.call('ZADD', KEYS[1], string.format('%.17g', new), ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
local extra = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if extra > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, extra - 1)
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
