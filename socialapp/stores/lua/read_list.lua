-- A list's page sources in one call, on one server only (the list's feed and its owner's sets
-- share the owner's hash slot, the members' outboxes are each on their own): KEYS[1] the
-- list's feed, KEYS[2] the authors the owner pulls (their home's pulled set), KEYS[3] whom
-- the owner does not see, each scored by when that ends, KEYS[4] the owner's lists' members
-- (list id -> member ids joined by ','). ARGV[1..3]: read bounds and count (see read());
-- ARGV[4]: the member that marks the hidden set loaded; ARGV[5]: now; ARGV[6]: the owner;
-- ARGV[7]: '1' when every member is pulled (read mode: no feed is read); ARGV[8]: the post
-- cache's key prefix; ARGV[9]: how many of the page's likely posts to read from it;
-- ARGV[10]: the list.
-- The list's sides are the home's: a member the owner's pulled set holds (a celebrity, a pull
-- override, an author being reconciled) is merged from their outbox, the others' posts are in
-- the feed (delivered to lists as to homes); the owner, if a member, is always read from
-- their outbox, as their home reads it.
-- 'hidden' when the hidden set is missing (load it); 'members' when KEYS[4] does not hold the
-- list (load it: the list may be unknown, or another's); '' when the pulled set or (unless
-- every member is pulled) the feed is missing: the page reads its sources apart, rebuilding
-- them.
-- Else {text, the ids of the page's likely posts joined by ',', their cached values...} as
-- read_page.lua gives them, the text joined by ';': the members the owner sees, the pulled
-- ones among them, the feed as "floor,member,..." ('' when not read), the authors of boosted
-- posts the owner does not see, the boosters whose boosts the owner hides, then the outboxes
-- of the pulled members in that order ('' for one Redis lost).
if not redis.call('ZSCORE', KEYS[3], ARGV[4]) then return 'hidden' end
local listed = redis.call('HGET', KEYS[4], ARGV[10])
if not listed then return 'members' end
local everyone, now = ARGV[7] == '1', tonumber(ARGV[5])
if not everyone and redis.call('SISMEMBER', KEYS[2], LOADED) == 0 then return '' end
renew(KEYS[4])
local members = {}
for member in string.gmatch(listed, '[^,]+') do members[#members + 1] = member end
local hidden = {}
for _, member in ipairs(hidden_among(KEYS[3], members, '', now)) do hidden[member] = true end
local visible, seen = {}, {}
for _, member in ipairs(members) do
  if not hidden[member] then
    visible[#visible + 1] = member
    seen[member] = true
  end
end
local pulled = visible
if not everyone then
  pulled = {}
  for first = 1, #visible, 1000 do
    local last = math.min(first + 999, #visible)
    local answers = redis.call('SMISMEMBER', KEYS[2], unpack(visible, first, last))
    for i = first, last do
      if answers[i - first + 1] == 1 or visible[i] == ARGV[6] then
        pulled[#pulled + 1] = visible[i]
      end
    end
  end
end
local found, feed = {}, ''
if not everyone then
  local read_ = read(KEYS[1])
  if not read_ then return '' end
  renew(KEYS[1])
  renew(KEYS[2])  -- kept while the owner reads lists only: it is the home's, but apart from it
  found[1], feed = read_, table.concat(read_, ',')
end
local outboxes = {}
for _, author in ipairs(pulled) do
  local read_ = read(OUTBOX_PREFIX .. author .. '}')
  outboxes[#outboxes + 1] = read_ and table.concat(read_, ',') or ''
  if read_ then found[#found + 1] = read_ end
end
local originals, boosters = boosts_hidden(found, KEYS[3], now)
local out = {
  table.concat(visible, ','), table.concat(pulled, ','), feed, table.concat(originals, ','),
  table.concat(boosters, ','),
}
for _, outbox in ipairs(outboxes) do out[#out + 1] = outbox end
local shown = page_rule(function(author) return not seen[author] end, originals, boosters)
return with_cached({table.concat(out, ';')}, ARGV[8], merged_ids(found, shown, tonumber(ARGV[9])))
