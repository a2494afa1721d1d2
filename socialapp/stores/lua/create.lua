-- Create the set if it does not exist. ARGV: cap, floor, score/member pairs.
if redis.call('EXISTS', key) == 1 then return 0 end
redis.call('ZADD', key, ARGV[2], SENTINEL)
local floor = tonumber(ARGV[2])
add_entries(key, 3, floor)
trim(key, tonumber(ARGV[1]), floor)
renew(key)
return 1
