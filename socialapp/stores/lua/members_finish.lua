-- Write list ARGV[2]'s members ARGV[3] into the owner's copy KEYS[1] if the load that read
-- them still holds the hash's token ARGV[1]: 0 when the copy was dropped since the load began
-- (members changed meanwhile: what it read may be stale, so it is not written).
if redis.call('HGET', key, 'loading') ~= ARGV[1] then return 0 end
redis.call('HSET', key, ARGV[2], ARGV[3])
renew(key)
return 1
