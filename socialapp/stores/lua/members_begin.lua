-- Begin loading a list's members into the owner's copy KEYS[1] (a hash: list id -> members
-- joined by ','): the loads' token, its field 'loading' (no list id), set to ARGV[1] unless a
-- load began before (every load since the copy was last dropped shares it; a drop ends them).
redis.call('HSETNX', key, 'loading', ARGV[1])
renew(key)
return redis.call('HGET', key, 'loading')
