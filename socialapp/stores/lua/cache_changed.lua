-- KEYS[1]: a post cache key. ARGV[1]: the TTL (s). The post changed in MongoDB: its cached
-- value gives way to a change mark, '~' and this server's clock in microseconds (a load
-- that began before it may hold the old post: cache_put refuses it), unless the post is
-- buried.
if redis.call('GET', KEYS[1]) == '-' then return 0 end
local now = redis.call('TIME')
redis.call('SET', KEYS[1], '~' .. now[1] .. string.format('%06d', tonumber(now[2])), 'EX', ARGV[1])
return 1
