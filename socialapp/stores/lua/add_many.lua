-- add.lua on every set in KEYS (one server: the keys span hash slots); how many existed. A
-- delivery (a post to the feeds of the lists holding its author) parses its entry once, and
-- its usual case is made here as deliver.lua makes it: one LPUSHX onto the key's pending
-- list, no function call and no look at the key's kind (a timeline without a pending list,
-- an outbox or a shared feed, has no such list, which LPUSHX does not create: it then takes
-- deliver_one's path, told the push found none).
local delivery, existed = delivery_args(), 0
if not delivery then
  for i = 1, #KEYS do existed = existed + add(KEYS[i]) end
  return existed
end
local cap, score, member, entry, encoded = tonumber(ARGV[1]), unpack(delivery)
for i = 1, #KEYS do
  local key = KEYS[i]
  local held = redis.call('LPUSHX', key .. PENDING_SUFFIX, encoded)
  if (held > 0 and held <= FOLD) or deliver_one(key, cap, score, member, entry, encoded, held) then
    existed = existed + 1
  end
end
return existed
