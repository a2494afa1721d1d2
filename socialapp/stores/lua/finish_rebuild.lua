-- Add the rebuilt entries, set the floor (never below a floor already set) and trim; a
-- no-op when the set is gone. ARGV: cap, floor, score/member pairs.
local current, current_text = read_floor(key)
if not current then return 0 end
local floor, floor_text = tonumber(ARGV[2]), ARGV[2]
if current ~= math.huge and current > floor then
  floor, floor_text = current, current_text
end
redis.call('ZADD', key, floor_text, SENTINEL)
add_entries(key, 3, floor)
trim(key, tonumber(ARGV[1]), floor)
renew(key)
return 1
