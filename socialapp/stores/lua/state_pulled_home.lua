-- A pulled home's plan (read mode: every followee's outbox) on the reader's hash slot, in
-- one call: KEYS[1] whom the reader follows (the member '#' while they follow hashtags),
-- KEYS[2] the hashtags they follow, KEYS[3] whom they do not see, each scored by when that
-- ends; ARGV[1] the member marking each set loaded, ARGV[2] now. On one server also KEYS[4],
-- readers' last activity, where the reader (ARGV[3]) is marked active at now.
-- Reply: {the followee set's members, the followed tags set's members, the followees the
-- reader does not see now}, each joined by ','; '-' for a set not loaded (the hidden ones
-- '-' too when the followees are not). The cost is the accounts followed, asked of the
-- hidden set 1000 at a time (lib.lua's hidden_among), never the accounts hidden.
if KEYS[4] then redis.call('ZADD', KEYS[4], ARGV[2], ARGV[3]) end
local function loaded(key)
  local members = redis.call('SMEMBERS', key)
  for _, member in ipairs(members) do
    if member == ARGV[1] then return members end
  end
  return nil
end
local followees, tags = loaded(KEYS[1]), loaded(KEYS[2])
local hidden = '-'
if followees and redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  local accounts = {}
  for _, member in ipairs(followees) do
    if member ~= ARGV[1] and member ~= '#' then accounts[#accounts + 1] = member end
  end
  hidden = table.concat(hidden_among(KEYS[3], accounts, '', tonumber(ARGV[2])), ',')
end
return {followees and table.concat(followees, ',') or '-', tags and table.concat(tags, ',') or '-',
  hidden}
