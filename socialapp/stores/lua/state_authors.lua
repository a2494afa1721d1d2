-- KEYS: follower counts (hash), strategies (hash), authors being reconciled (hash): one
-- server only, the keys span hash slots. ARGV[1]: author ids joined by ','; ARGV[2]: the
-- field present once the counts were loaded. False when they were not; else
-- "count:override:unsettled" per author, in order, joined by ','.
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return false end
local ids = {}
for id in string.gmatch(ARGV[1], '[^,]+') do ids[#ids + 1] = id end
local out = {}
for first = 1, #ids, 1000 do
  local batch = {unpack(ids, first, math.min(first + 999, #ids))}
  local counts = redis.call('HMGET', KEYS[1], unpack(batch))
  local overrides = redis.call('HMGET', KEYS[2], unpack(batch))
  local unsettled = redis.call('HMGET', KEYS[3], unpack(batch))
  for i = 1, #batch do
    out[#out + 1] = (counts[i] or '') .. ':' .. (overrides[i] or '') .. ':'
      .. (unsettled[i] and '1' or '0')
  end
end
return table.concat(out, ',')
