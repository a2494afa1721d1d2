-- Add entries to an existing set, raising its floor to at least ARGV[2]; a no-op when the
-- set does not exist. ARGV: cap, floor, score/member pairs.
local floor = read_floor()
if not floor then return 0 end
if floor ~= math.huge and tonumber(ARGV[2]) > floor then
  floor = tonumber(ARGV[2])
  redis.call('ZADD', key, ARGV[2], SENTINEL)
end
add_entries(3, floor)
trim(tonumber(ARGV[1]), floor)
return 1
