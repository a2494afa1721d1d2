-- Prepended to every timeline script. KEYS[1] is one sorted set of "post_id:author_id"
-- members scored by post id, plus the member 'floor': the set is complete for every id
-- above its score (+inf while the set is being rebuilt: trust nothing, trim nothing).
local SENTINEL = 'floor'
local key = KEYS[1]

local function read_floor()
  local floor = redis.call('ZSCORE', key, SENTINEL)
  if floor then return tonumber(floor), floor end
  return nil, nil
end

-- ARGV[first], ARGV[first + 1], ... are score, member pairs; entries at or below a finite
-- floor are already accounted for and dropped.
local function add_entries(first, floor)
  for i = first, #ARGV, 2 do
    if floor == math.huge or tonumber(ARGV[i]) > floor then
      redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
    end
  end
end

-- Keep at most cap entries; the floor rises to the highest score removed, never lowers.
local function trim(cap, floor)
  if floor == math.huge then return end
  local excess = redis.call('ZCARD', key) - 1 - cap
  if excess <= 0 then return end
  local lowest = redis.call('ZRANGE', key, 0, excess, 'WITHSCORES')
  local removed, highest, highest_text = 0, floor, nil
  for i = 1, #lowest, 2 do
    if lowest[i] ~= SENTINEL and removed < excess then
      redis.call('ZREM', key, lowest[i])
      removed = removed + 1
      if tonumber(lowest[i + 1]) > highest then
        highest, highest_text = tonumber(lowest[i + 1]), lowest[i + 1]
      end
    end
  end
  if highest_text then redis.call('ZADD', key, highest_text, SENTINEL) end
end
