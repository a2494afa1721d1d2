-- KEYS: post cache keys. ARGV[1]: when the caller began loading these posts from MongoDB
-- (this server's clock, microseconds, from TIME); ARGV[2]: the TTL (s); ARGV[2 + i]: KEYS[i]'s
-- value. A key is written if it holds nothing, or a change mark ('~' and when the change
-- was marked) older than ARGV[1]: a load that began after the mark saw the change. A cached
-- post, a newer mark and a tombstone stay.
for i, key in ipairs(KEYS) do
  local found = redis.call('GET', key)
  if not found or (string.sub(found, 1, 1) == '~'
      and tonumber(string.sub(found, 2)) < tonumber(ARGV[1])) then
    redis.call('SET', key, ARGV[2 + i], 'EX', ARGV[2])
  end
end
return 1
