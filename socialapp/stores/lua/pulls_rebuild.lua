-- ARGV[1] = 'begin': replace the pulled set with an empty one being rebuilt (authors added
-- meanwhile are kept). 'finish': add ARGV[2..] and mark the set loaded; a no-op when it
-- vanished meanwhile.
if ARGV[1] == 'begin' then
  redis.call('DEL', key)
  redis.call('SADD', key, BUILDING)
  renew(key)
  return 1
end
if redis.call('EXISTS', key) == 0 then return 0 end
for first = 2, #ARGV, 1000 do
  redis.call('SADD', key, unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
redis.call('SREM', key, BUILDING)
redis.call('SADD', key, LOADED)
renew(key)
return 1
