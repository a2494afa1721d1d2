-- Replace the set with an empty one that is being rebuilt.
redis.call('DEL', key)
redis.call('ZADD', key, '+inf', SENTINEL)
renew(key)
return 1
