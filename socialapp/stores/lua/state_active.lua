-- KEYS[1]: readers' last activity (sorted set by time). ARGV[1]: reader ids joined by ',';
-- ARGV[2]: the cutoff. The readers seen at or after the cutoff, in order, joined by ','.
local ids = {}
for id in string.gmatch(ARGV[1], '[^,]+') do ids[#ids + 1] = id end
local cutoff = tonumber(ARGV[2])
local active = {}
for first = 1, #ids, 1000 do
  local batch = {unpack(ids, first, math.min(first + 999, #ids))}
  local seen = redis.call('ZMSCORE', KEYS[1], unpack(batch))
  for i = 1, #batch do
    if seen[i] and tonumber(seen[i]) >= cutoff then active[#active + 1] = batch[i] end
  end
end
return table.concat(active, ',')
