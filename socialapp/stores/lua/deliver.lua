-- One server only (the sets span hash slots): deliver one entry to the existing sets
-- ARGV[4] .. reader .. '}' of the readers ARGV[5..] (reader ids, at most 1000): their homes
-- (ARGV[4] the homes' prefix), or their tagged sets. ARGV[1]: the sets' cap; ARGV[2],
-- ARGV[3]: the entry's score and member. A set exists exactly while its reader is active:
-- it is built when they read after being away, and each of their reads renews its TTL, the
-- activity cutoff. So the set's existence is the activity check, and an idle reader's set
-- has expired and is skipped. Each set is treated as add.lua treats it: the entry dropped
-- at or below a finite floor, then trimmed (once its pending list, one LPUSHX a home or
-- tagged set, is folded in). The keys are built here from the ids, so the client does not
-- build them. How many sets exist.
local cap, score, member, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local entry, text = entry_of(member), is_text(prefix)
local encoded = not text and encode(entry) or nil
-- The usual delivery, one LPUSHX (a home's: the entry's records; a tagged set's: its
-- member), is made here: no function call, one key built.
local pushed = (prefix == HOME_PREFIX and encoded) or (text and member)
local tail = '}' .. PENDING_SUFFIX
local reached = 0
for i = 5, #ARGV do
  local held = pushed and redis.call('LPUSHX', prefix .. ARGV[i] .. tail, pushed) or nil
  if held and held > 0 and held <= FOLD then
    reached = reached + 1
  elseif deliver_one(prefix .. ARGV[i] .. '}', cap, score, member, entry, encoded, text, held) then
    reached = reached + 1
  end
end
return reached
