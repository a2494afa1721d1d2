-- A pulled home's plan (read mode: every followee's outbox) on the reader's hash slot, in
-- one call: KEYS[1] whom the reader follows (the member '#' while they follow hashtags),
-- KEYS[2] the hashtags they follow, KEYS[3] whom they do not see, each scored by when that
-- ends; ARGV[1] the member marking each set loaded, ARGV[2] now. On one server also KEYS[4],
-- readers' last activity, where the reader (ARGV[3]) is marked active at now.
-- Reply: {the followee set's members, the followed tags set's members, the followees the
-- reader does not see now}, each joined by ','; '-' for a set not loaded (the hidden ones
-- '-' too when the followees are not). The cost is the accounts followed, asked of the
-- hidden set 1000 at a time, never the accounts hidden.
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
  local now, accounts, found = tonumber(ARGV[2]), {}, {}
  for _, member in ipairs(followees) do
    if member ~= ARGV[1] and member ~= '#' then accounts[#accounts + 1] = member end
  end
  for first = 1, #accounts, 1000 do
    local last = math.min(first + 999, #accounts)
    local ends = redis.call('ZMSCORE', KEYS[3], unpack(accounts, first, last))
    for i = first, last do
      local until_ = ends[i - first + 1]
      if until_ and tonumber(until_) > now then found[#found + 1] = accounts[i] end
    end
  end
  hidden = table.concat(found, ',')
end
return {followees and table.concat(followees, ',') or '-', tags and table.concat(tags, ',') or '-',
  hidden}
