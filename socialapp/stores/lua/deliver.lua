-- One server only (the homes span hash slots): deliver one entry to the homes of the active
-- readers among ARGV[5..] (reader ids, at most 1000). KEYS[1]: readers' last activity (a
-- reader seen before the cutoff ARGV[4] is idle: skipped, their home rebuilt on their next
-- read). ARGV[1]: the homes' cap; ARGV[2], ARGV[3]: the entry's score and member. Each home
-- is treated as add.lua treats it: written only if it exists, the entry dropped at or below
-- a finite floor, then trimmed. The home keys are built here from the ids, so the client
-- neither builds them nor reads the activity of each reader. How many readers were active.
local cap, score, member, cutoff = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local active = 0
if #ARGV > 4 then
  local seen = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, 5))
  for i = 1, #seen do
    if seen[i] and tonumber(seen[i]) >= cutoff then
      active = active + 1
      local home = HOME_PREFIX .. ARGV[i + 4] .. '}'
      local floor = read_floor(home)
      if floor and (floor == math.huge or score > floor) then
        redis.call('ZADD', home, ARGV[2], member)
        trim(home, cap, floor)
      end
    end
  end
end
return active
