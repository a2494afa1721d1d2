-- A list's page sources in one call, on one server only (the list's feed and its owner's sets
-- share the owner's hash slot, the members' outboxes are each on their own): KEYS[1] the
-- list's feed, KEYS[2] the authors the owner pulls (their home's pulled set), KEYS[3] whom
-- the owner does not see, each scored by when that ends, KEYS[4] the owner's lists' members
-- (list id -> member ids joined by ','). ARGV[1..3]: read bounds and count (see read());
-- ARGV[4]: the member that marks the hidden set loaded; ARGV[5]: now; ARGV[6]: the owner;
-- ARGV[7]: '1' when every member is pulled (read mode: no feed is read); ARGV[8]: the post
-- cache's key prefix; ARGV[9]: how many of the page's likely posts to read from it;
-- ARGV[10]: the list; ARGV[11]: '1' when the script may answer the page itself (below).
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
-- of the pulled members in that order ('' for one Redis lost). With ARGV[11] '1', when
-- nothing is left for Python to decide (every pulled member's outbox found, each source
-- read a page deep), the page itself as read_page.lua answers it (decided_answer: the
-- feed in the home's place).
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
local found, feed = {}, nil
if not everyone then
  feed = read(KEYS[1])
  if not feed then return '' end
  renew(KEYS[1])
  renew(KEYS[2])  -- kept while the owner reads lists only: it is the home's, but apart from it
  found[1] = feed
end
local outboxes = {}  -- each read, false for one lost
for i, author in ipairs(pulled) do
  outboxes[i] = read(OUTBOX_PREFIX .. author .. '}')
  if outboxes[i] then found[#found + 1] = outboxes[i] end
end
local originals, boosters = boosts_hidden(found, KEYS[3], now)
local shown, boosts = noting_boosts(page_rule(function(author) return not seen[author] end,
  originals, boosters))
local count, prefetch = tonumber(ARGV[3]), tonumber(ARGV[9])
local ids = merged_ids(found, shown, prefetch)
local reply = with_cached({''}, ARGV[8], ids)  -- its text once the page is Python's
if ARGV[11] == '1' and #found == (feed and 1 or 0) + #pulled then
  local reads = {}
  for i, read_ in ipairs(found) do reads[i] = {read_} end
  local answer = decided_answer(reads, count, prefetch, ids, {unpack(reply, 3)}, boosts, feed,
    #pulled)
  if answer then return answer end
end
local out = {
  table.concat(visible, ','), table.concat(pulled, ','), feed and table.concat(feed, ',') or '',
  table.concat(originals, ','), table.concat(boosters, ','),
}
for _, outbox in ipairs(outboxes) do
  out[#out + 1] = outbox and table.concat(outbox, ',') or ''
end
reply[1] = table.concat(out, ';')
return reply
