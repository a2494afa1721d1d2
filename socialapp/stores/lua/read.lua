-- {floor, members...} newest first with ARGV[2] < score < ARGV[1] (bounds in ZRANGE
-- syntax), at most ARGV[3] members; nil when the set does not exist.
local _, floor_text = read_floor()
if not floor_text then return false end
local count = tonumber(ARGV[3])
local result = {floor_text}
local members = redis.call('ZRANGE', key, ARGV[1], ARGV[2], 'BYSCORE', 'REV', 'LIMIT', 0, count + 1)
for _, member in ipairs(members) do
  if member ~= SENTINEL and #result <= count then result[#result + 1] = member end
end
return result
