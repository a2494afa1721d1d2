-- Remove every entry whose member ends with ARGV[1] (":<author_id>").
local suffix = ARGV[1]
local removed = 0
for _, member in ipairs(redis.call('ZRANGE', key, 0, -1)) do
  if string.sub(member, -#suffix) == suffix then
    removed = removed + redis.call('ZREM', key, member)
  end
end
return removed
