-- A pulled page's fetch round in one call (read mode's home: every followee's outbox, and
-- the hashtags it pulls), on one server only (the outboxes, the shared feeds and the
-- reader's hidden set span hash slots): KEYS[1] whom the reader does not see, each scored by
-- when that ends (ARGV[5] the member that marks it loaded; no key for an anonymous reader
-- when ARGV[6] is '0'), then the shared feeds. ARGV[1..3]: read bounds and count (see
-- read()); ARGV[4]: now; ARGV[7]: the outboxes' lower bound ('' the page's own: below a
-- threshold, socialapp.domain.timeline.pull_round); ARGV[8..]: the authors whose outboxes
-- are read (their keys built here). The shared feeds read are renewed.
-- Reply: one string, 'outboxes|feeds|hidden|boosters': the outboxes and the feeds as
-- read_many.lua gives them (each "floor,member,..." or '' when missing, joined by ';'),
-- then, as the hidden set answers them, the authors it hides among those of the posts the
-- outboxes boost and of the feeds' entries, and the boosters whose boosts it hides (each
-- joined by ','; '-' for both when the set is missing: load it). Python asks the same
-- questions of the same reads (hidden_questions) when a cluster reads them apart.
local hidden_key = ARGV[6] == '1' and KEYS[1] or nil
local found, outboxes, feeds = {}, {}, {}
local lower = ARGV[7] ~= '' and ARGV[7] or nil
for i = 8, #ARGV do
  local read_ = read(OUTBOX_PREFIX .. ARGV[i] .. '}', lower)
  outboxes[#outboxes + 1] = read_ and table.concat(read_, ',') or ''
  if read_ then found[#found + 1] = read_ end
end
local shared = {}
for i = hidden_key and 2 or 1, #KEYS do
  local read_ = read(KEYS[i])
  feeds[#feeds + 1] = read_ and table.concat(read_, ',') or ''
  if read_ then
    renew(KEYS[i])
    shared[#shared + 1] = read_
  end
end
local hidden_text, boosters_text = '', ''
if hidden_key and not redis.call('ZSCORE', hidden_key, ARGV[5]) then
  hidden_text, boosters_text = '-', '-'
elseif hidden_key then
  local now = tonumber(ARGV[4])
  local originals, boosters = boosts_hidden(found, hidden_key, now)
  local listed = {}
  for _, author in ipairs(originals) do listed[author] = true end
  for _, author in ipairs(hidden_among(hidden_key, entry_authors(shared, listed), '', now)) do
    originals[#originals + 1] = author
  end
  hidden_text, boosters_text = table.concat(originals, ','), table.concat(boosters, ',')
end
return table.concat(outboxes, ';') .. '|' .. table.concat(feeds, ';') .. '|' .. hidden_text ..
  '|' .. boosters_text
