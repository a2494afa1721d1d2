-- One server only (the sets span hash slots): deliver one entry to the existing sets
-- ARGV[4] .. reader .. '}' of the readers in ARGV[7] (reader ids, at most 1000, as one JSON
-- array of strings): their homes (ARGV[4] the homes' prefix), or their tagged sets.
-- ARGV[1]: the sets' cap; ARGV[2], ARGV[3]: the entry's score and member. A set exists
-- exactly while its reader is active: it is built when they read after being away, and
-- each of their reads renews its TTL, the activity cutoff. So the set's existence is the
-- activity check, and an idle reader's set has expired and is skipped. Each set is treated
-- as add.lua treats it: the entry dropped at or below a finite floor, then trimmed (once its
-- pending list, one LPUSHX a home or tagged set, is folded in). The keys are built here from
-- the ids, so the client does not build them. The ids come as one argument: the client
-- packs it for a fraction of what a thousand arguments cost it, and the server decodes it
-- (cjson, strings: a number would lose the digits of a 53-bit id) for about what it saves
-- reading a thousand arguments off the wire.
-- ARGV[5] (or ''): a sorted set of readers scored by when their mark ends (the caller's
-- to name), ARGV[6] the time now: the readers among ARGV[7] whose mark holds are returned
-- too, read in the same call (one ZMSCORE, none while the set is empty).
-- Returns {how many sets exist, each marked reader's id}.
local cap, score, member, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local marks = ARGV[5] ~= '' and redis.call('ZCARD', ARGV[5]) > 0 and ARGV[5] or nil
local entry = entry_of(member)
local encoded = encode(entry)
-- The usual delivery, one LPUSHX of the entry's records (a home's, a tagged set's), is made
-- here: no function call, one key built.
local pushed = (prefix == HOME_PREFIX or prefix == TAGGED_PREFIX) and encoded
local tail = '}' .. PENDING_SUFFIX
local readers, reached = cjson.decode(ARGV[7]), 0
for i = 1, #readers do
  local reader = readers[i]
  local held = pushed and redis.call('LPUSHX', prefix .. reader .. tail, pushed) or nil
  if held and held > 0 and held <= FOLD then
    reached = reached + 1
  elseif deliver_one(prefix .. reader .. '}', cap, score, member, entry, encoded, held) then
    reached = reached + 1
  end
end
local found = {reached}
if marks and #readers > 0 then
  local now = tonumber(ARGV[6])
  local untils = redis.call('ZMSCORE', marks, unpack(readers))
  for i, until_ in ipairs(untils) do
    if until_ and tonumber(until_) > now then found[#found + 1] = readers[i] end
  end
end
return found
