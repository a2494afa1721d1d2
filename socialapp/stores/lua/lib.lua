-- Prepended to every timeline script. Each key is one sorted set of "post_id:author_id"
-- members scored by post id, plus the member 'floor': the set is complete for every id
-- above its score (+inf while the set is being rebuilt: trust nothing, trim nothing).
-- Single-key scripts work on KEYS[1]; the *_many scripts loop over KEYS. TTL (seconds) is
-- defined by TimelineStore above this library: creating or rebuilding a set sets it, and
-- reading a home renews it (deliveries do not: that would cost a command per follower), so
-- an idle reader's home expires. Only sets that can be rebuilt carry a TTL, which is what
-- a volatile-* eviction policy evicts.
local SENTINEL = 'floor'
local key = KEYS[1]

local function renew(key)
  redis.call('EXPIRE', key, TTL)
end

local function read_floor(key)
  local floor = redis.call('ZSCORE', key, SENTINEL)
  if floor then return tonumber(floor), floor end
  return nil, nil
end

-- ARGV[first], ARGV[first + 1], ... are score, member pairs; entries at or below a finite
-- floor are already accounted for and dropped.
local function add_entries(key, first, floor)
  for i = first, #ARGV, 2 do
    if floor == math.huge or tonumber(ARGV[i]) > floor then
      redis.call('ZADD', key, ARGV[i], ARGV[i + 1])
    end
  end
end

-- Keep at most cap entries; the floor rises to the highest score removed, never lowers.
local function trim(key, cap, floor)
  if floor == math.huge then return end
  local excess = redis.call('ZCARD', key) - 1 - cap
  if excess <= 0 then return end
  local lowest = redis.call('ZRANGE', key, 0, excess, 'WITHSCORES')
  local removed, highest, highest_text = 0, floor, nil
  for i = 1, #lowest, 2 do
    if lowest[i] ~= SENTINEL and removed < excess then
      redis.call('ZREM', key, lowest[i])
      removed = removed + 1
      if tonumber(lowest[i + 1]) > highest then
        highest, highest_text = tonumber(lowest[i + 1]), lowest[i + 1]
      end
    end
  end
  if highest_text then redis.call('ZADD', key, highest_text, SENTINEL) end
end

-- Add the entries ARGV[3..] to an existing set, raising its floor to at least ARGV[2] and
-- trimming it to ARGV[1] entries; 0 (and nothing written) when the set does not exist.
local function add(key)
  local floor = read_floor(key)
  if not floor then return 0 end
  if floor ~= math.huge and tonumber(ARGV[2]) > floor then
    floor = tonumber(ARGV[2])
    redis.call('ZADD', key, ARGV[2], SENTINEL)
  end
  add_entries(key, 3, floor)
  trim(key, tonumber(ARGV[1]), floor)
  return 1
end

-- {floor, members...} newest first with ARGV[2] < score < ARGV[1] (bounds in ZRANGE
-- syntax; ``lower``, if given, in place of ARGV[2]), at most ARGV[3] members; false when
-- the set does not exist.
local function read(key, lower)
  local _, floor_text = read_floor(key)
  if not floor_text then return false end
  local count = tonumber(ARGV[3])
  local result = {floor_text}
  local members = redis.call('ZRANGE', key, ARGV[1], lower or ARGV[2], 'BYSCORE', 'REV',
    'LIMIT', 0, count + 1)
  for _, member in ipairs(members) do
    if member ~= SENTINEL and #result <= count then result[#result + 1] = member end
  end
  return result
end

-- Which of ``members`` the hidden set ``key`` (a reader's: each account they do not see,
-- scored by when that ends) hides at ``now``, less ``prefix``: one ZMSCORE per 1000.
local function hidden_among(key, members, prefix, now)
  local hidden = {}
  for first = 1, #members, 1000 do
    local last = math.min(first + 999, #members)
    local until_ = redis.call('ZMSCORE', key, unpack(members, first, last))
    for i = first, last do
      local ends = until_[i - first + 1]
      if ends and tonumber(ends) > now then
        hidden[#hidden + 1] = string.sub(members[i], #prefix + 1)
      end
    end
  end
  return hidden
end

-- The ids of the newest ``count`` posts of ``sources`` (reads, each {floor, member...}
-- newest first) merged by their heads, each once, for a page to read with its sources:
-- ``shown(member)`` gives the entry's post id (text) and the id of the post it boosts, or
-- nil when the page leaves the entry out. A boost brings the post it boosts along, not
-- counted (the count is entries). A page costs count x sources comparisons of numbers,
-- where sorting every entry cost a Lua call per comparison.
local function merged_ids(sources, shown, count)
  local at, head, head_id, head_original = {}, {}, {}, {}
  local function advance(s)
    local source = sources[s]
    while at[s] <= #source do
      local post, original = shown(source[at[s]])
      at[s] = at[s] + 1
      if post then
        head[s], head_id[s], head_original[s] = tonumber(post), post, original
        return
      end
    end
    head[s] = nil
  end
  for s = 1, #sources do
    at[s] = 2
    advance(s)
  end
  local ids, listed = {}, {}
  while #ids < count do
    local newest
    for s = 1, #sources do
      if head[s] and (not newest or head[s] > head[newest]) then newest = s end
    end
    if not newest then break end
    local post, original = head_id[newest], head_original[newest]
    if not listed[post] then
      listed[post] = true
      ids[#ids + 1] = post
      if original and not listed[original] then
        listed[original] = true
        ids[#ids + 1] = original
        count = count + 1
      end
    end
    advance(newest)
  end
  return ids
end

-- ``reply`` with ``ids`` joined by ',' ('' for none) and their post cache values appended
-- (keys ``prefix`` .. id .. '}', one MGET: on one server only, as the keys span slots).
local function with_cached(reply, prefix, ids)
  reply[#reply + 1] = table.concat(ids, ',')
  if #ids == 0 then return reply end
  local keys = {}
  for i = 1, #ids do keys[i] = prefix .. ids[i] .. '}' end
  for _, value in ipairs(redis.call('MGET', unpack(keys))) do reply[#reply + 1] = value end
  return reply
end

-- Boosts among ``sources`` (reads, each {floor, member...}) the reader may not see, by the
-- hidden set ``key`` at ``now``: the authors of boosted posts it hides, and the boosters
-- whose boosts it hides (members 'r' .. booster). One ZMSCORE per 1000 of each.
local function boosts_hidden(sources, key, now)
  local originals, boosters, listed = {}, {}, {}
  for s = 1, #sources do
    for i = 2, #sources[s] do
      local original, booster = string.match(sources[s][i], '^%d+:%d+:(%d+):(%d+)$')
      if original and not listed[original] then
        listed[original] = true
        originals[#originals + 1] = original
      end
      if booster and not listed['r' .. booster] then
        listed['r' .. booster] = true
        boosters[#boosters + 1] = 'r' .. booster
      end
    end
  end
  return hidden_among(key, originals, '', now), hidden_among(key, boosters, 'r', now)
end

-- The page rule of socialapp.domain.timeline.shown, as merged_ids asks it: an entry's post
-- id and the post it boosts, or nil when its author is gone (``gone(author)``), it boosts a
-- post by an author in ``originals`` or its booster is in ``boosters`` (lists of ids).
local function page_rule(gone, originals, boosters)
  local gone_original, gone_booster = {}, {}
  for _, author in ipairs(originals) do gone_original[author] = true end
  for _, author in ipairs(boosters) do gone_booster[author] = true end
  return function(entry)
    local post, author = string.match(entry, '^(%d+):'), string.match(entry, ':(%d+)$')
    local original, original_author = string.match(entry, '^%d+:(%d+):(%d+):%d+$')
    if not post or gone(author) then return nil end
    if original and (gone_original[original_author] or gone_booster[author]) then return nil end
    return post, original
  end
end
