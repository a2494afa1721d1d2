-- A page of the shared feeds (public, hashtags) in one call, on one server only (the feeds,
-- the reader's hidden set and the post cache span hash slots): KEYS[1..ARGV[4]] the feeds,
-- then for a signed-in reader KEYS[ARGV[4] + 1], whom the reader does not see, each scored by
-- when that ends (ARGV[6] the member that marks it loaded). ARGV[1..3]: read bounds and
-- count (see read()); ARGV[5]: now; ARGV[7]: the post cache's key prefix; ARGV[8]: how many
-- of the page's likely posts to read from it.
-- Reply: {the feeds as read_many.lua gives them (each "floor,member,..." or '' when missing,
-- joined by ';'; each feed read is renewed), the authors of their entries hidden from the
-- reader now joined by ',' ('-' when the hidden set is missing: load it; '' for an anonymous
-- reader), the ids of the newest ARGV[8] entries of the feeds merged, less hidden authors'
-- and duplicates, joined by ',', then their cached values}. The page keeps the newest of
-- those entries above where every feed is known, so what it shows is among them and a warm
-- page takes this one round trip. No boost enters these feeds: a member is "post:author".
-- ARGV[9] '1': when the script finds the whole page (decided_page), it answers it instead:
-- {'=', the hidden authors as above, the page's post ids joined by ',', their response
-- forms}.
local feeds, now = tonumber(ARGV[4]), tonumber(ARGV[5])
local found, texts = {}, {}
for i = 1, feeds do
  local read_ = read(KEYS[i])
  texts[i] = ''
  if read_ then
    renew(KEYS[i])
    found[#found + 1] = read_
    texts[i] = table.concat(read_, ',')
  end
end
local hidden_key, hidden, hidden_text = KEYS[feeds + 1], {}, ''
if hidden_key and not redis.call('ZSCORE', hidden_key, ARGV[6]) then
  hidden_text = '-'
elseif hidden_key then
  local names = hidden_among(hidden_key, entry_authors(found, {}), '', now)
  for _, author in ipairs(names) do hidden[author] = true end
  hidden_text = table.concat(names, ',')
end
local function shown(entry)
  local post, author = string.match(entry, '^(%d+):(%d+)$')
  if post and not hidden[author] then return post end
end
local count, prefetch = tonumber(ARGV[3]), tonumber(ARGV[8])
local ids = merged_ids(found, shown, prefetch)
local reply = with_cached({table.concat(texts, ';'), hidden_text}, ARGV[7], ids)
-- The page itself (decided_page) when nothing is left for Python to decide: every feed
-- found and whom the reader does not see known. Else the reply goes to Python's path.
if ARGV[9] == '1' and #found == feeds and hidden_text ~= '-' then
  local reads = {}
  for i, read_ in ipairs(found) do reads[i] = {read_} end
  local open = ARGV[2] == '-inf'
  local page, forms = decided_page(reads, count, prefetch, ids, {unpack(reply, 4)}, {}, open)
  if page then
    local answer = {'=', hidden_text, table.concat(page, ',')}
    for _, form in ipairs(forms) do answer[#answer + 1] = form end
    return answer
  end
end
return reply
