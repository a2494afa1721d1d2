-- KEYS[1]: a reader's followee set. Its members joined by ',' ('' when it does not exist):
-- one string parses much faster than a reply of many.
return table.concat(redis.call('SMEMBERS', KEYS[1]), ',')
