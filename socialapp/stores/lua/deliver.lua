-- One server only (the homes span hash slots): deliver one entry to the existing homes of
-- the readers ARGV[4..] (reader ids, at most 1000). ARGV[1]: the homes' cap; ARGV[2],
-- ARGV[3]: the entry's score and member. A home exists exactly while its reader is active:
-- it is built when they read after being away, and each of their reads renews its TTL, the
-- activity cutoff. So the home's existence is the activity check, and an idle reader's home
-- has expired and is skipped. Each home is treated as add.lua treats it: the entry dropped
-- at or below a finite floor, then trimmed. The home keys are built here from the ids, so
-- the client does not build them. How many homes exist.
local cap, score, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local reached = 0
for i = 4, #ARGV do
  local home = HOME_PREFIX .. ARGV[i] .. '}'
  local floor = read_floor(home)
  if floor then
    reached = reached + 1
    if floor == math.huge or score > floor then
      redis.call('ZADD', home, ARGV[2], member)
      trim(home, cap, floor)
    end
  end
end
return reached
