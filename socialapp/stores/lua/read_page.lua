-- A home page's sources, on the reader's hash slot: KEYS[1] home, KEYS[2] the authors the
-- reader pulls, KEYS[3] whom the reader follows, KEYS[4] whom the reader does not see, each
-- scored by when that ends (one hash tag). ARGV[1..3]: read bounds and count (see read());
-- ARGV[4]: the reader; ARGV[5]: the member that marks the followee and hidden sets loaded;
-- ARGV[6]: now. KEYS[5] the reader's tagged set (posts of the pushed hashtags they follow,
-- members "post:author#tag_id"), KEYS[6] the hashtags they follow, each name and each id
-- ('#' .. id: what the tagged set's members carry) (same hash tag). On one
-- server (the keys span hash slots) also KEYS[7], readers' last activity, and ARGV[7], the
-- cutoff of activity: the reader is marked active, and the outboxes are read here too; and
-- KEYS[8], KEYS[9], the tags' follower counts and the tags being reconciled. The last key,
-- on every deployment, is the reader's keyword filters' version (same hash tag).
-- With ARGV[11] (one server, after ARGV[8..10]: the hashtags' feeds' key prefix) and ARGV[12]
-- (the fewest followers at which a followed hashtag is pulled, '' for none: FanoutSettings'
-- tag_pull_at), the feeds of the followed hashtags pulled (each not counted, being
-- reconciled or counted at or above ARGV[12]) are read here too, so that a warm page of a
-- reader who follows a pulled hashtag is still one round trip.
-- 'inactive' when the reader was idle past the cutoff (fan-out skipped them: rebuild);
-- 'hidden' when the hidden set is missing (reload it); 'tags' when the reader follows
-- hashtags and the set of them is missing or holds no tag numbers (reload it), 'tagged'
-- when their tagged set is (rebuild it); '' when the home, the pulled set or the followee
-- set is missing (rebuild or reload). Else, joined by ';': the home as
-- "floor,member,...", the pulled authors the reader still follows and sees, the authors of
-- home entries the reader no longer follows or does not see, the authors of boosted posts
-- the reader does not see, the boosters whose boosts the reader hides, the post id down to
-- which the outboxes were read ('' when a page deep: see below), 1 when the reader follows
-- hashtags (member '#' of KEYS[3]) else 0, and when 1: the tagged set as
-- "floor,member,...", the followed tags (on one server each as "name=followers=1 or 0",
-- followers '' when not counted, 1 when being reconciled), the authors of tagged entries
-- the reader does not see; the keyword filters' version ('' when missing); the hashtags whose
-- feeds were read (ARGV[11]), and the authors of those feeds' entries the reader does not
-- see; then (one server) the outboxes of the reader and of each pulled author in that order,
-- then the feeds read, in the order of their hashtags (each '' when missing). The cost is
-- the page and the pulled authors, never the number of accounts followed or hidden.
-- With ARGV[8] (one server: the post cache's key prefix), the reply is {that text, the ids
-- of the page's likely posts joined by ',', their cached values...}: the newest ARGV[9]
-- entries of the sources merged (and the posts they boost), less unfollowed authors' (a
-- superset of what the merge keeps, as the merge only drops entries below where every
-- source is known), so a warm page takes one round trip. With ARGV[10] '1' the script may
-- answer the page itself (below). Followee checks are one SMISMEMBER per list of authors,
-- hidden checks one ZMSCORE.
local filter_version = KEYS[#KEYS]
local here = #KEYS > 7
if here then
  local seen = redis.call('ZSCORE', KEYS[7], ARGV[4])
  redis.call('ZADD', KEYS[7], ARGV[6], ARGV[4])
  if not seen or tonumber(seen) < tonumber(ARGV[7]) then return 'inactive' end
end
if not redis.call('ZSCORE', KEYS[4], ARGV[5]) then return 'hidden' end
local home = read(KEYS[1])
if not home or redis.call('SISMEMBER', KEYS[2], LOADED) == 0
    or redis.call('SISMEMBER', KEYS[3], ARGV[5]) == 0 then
  return ''
end
renew(KEYS[1])
renew(KEYS[2])
-- Which of ``members`` the reader follows (KEYS[3]) and sees (not in KEYS[4] past now):
-- 1 or 0 each, one SMISMEMBER and one ZMSCORE per 1000.
local now = tonumber(ARGV[6])
local function followed(members)
  local answers = {}
  for first = 1, #members, 1000 do
    local last = math.min(first + 999, #members)
    local follows = redis.call('SMISMEMBER', KEYS[3], unpack(members, first, last))
    local hidden = redis.call('ZMSCORE', KEYS[4], unpack(members, first, last))
    for i, answer in ipairs(follows) do
      if hidden[i] and tonumber(hidden[i]) > now then answer = 0 end
      answers[#answers + 1] = answer
    end
  end
  return answers
end
local candidates = {}
for _, author in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if author ~= LOADED then candidates[#candidates + 1] = author end
end
local pulled = {}
for i, answer in ipairs(followed(candidates)) do
  if answer == 1 then pulled[#pulled + 1] = candidates[i] end
end
-- The outboxes first (one server), so that their boosts are checked with the home's.
-- A full home (ARGV[3] entries above its floor) bounds the page: the merge keeps only what
-- every source is known to hold, and the home is known only down to its last entry, so no
-- outbox entry below it is on this page (the next read of the page goes on below it). The
-- outboxes are read down to that entry (``bound``), not a page deep each.
local found, outboxes, bound = {home}, {}, ''
if here then
  if #home - 1 >= tonumber(ARGV[3]) then
    local last = string.match(home[#home], '^(%d+):')
    if tonumber(last) > tonumber(home[1]) then bound = last end
  end
  local lower = bound ~= '' and bound or nil
  local function outbox_read(author)
    local read_ = read(OUTBOX_PREFIX .. author .. '}', lower)
    outboxes[#outboxes + 1] = read_
    if read_ then found[#found + 1] = read_ end
  end
  outbox_read(ARGV[4])
  for _, author in ipairs(pulled) do outbox_read(author) end
end
local authors, seen = {}, {}
for i = 2, #home do
  local author = string.match(home[i], ':(%d+)$')
  if author ~= ARGV[4] and not seen[author] then
    seen[author] = true
    authors[#authors + 1] = author
  end
end
local unfollowed = {}
for i, answer in ipairs(followed(authors)) do
  if answer == 0 then unfollowed[#unfollowed + 1] = authors[i] end
end
local hidden_originals, hidden_boosters = boosts_hidden(found, KEYS[4], now)
-- The pushed hashtags' posts: the tagged set, shown while its tag is followed and its
-- author is not hidden (followed or not: the tag brings them).
local follows_tags = redis.call('SISMEMBER', KEYS[3], TAGS)
local tagged_text, states, tagged_hidden, tag_followed, tag_hidden = '', {}, {}, {}, {}
-- The pulled hashtags' feeds read here (ARGV[11]): their names, texts and reads, and whom
-- the reader does not see among their entries' authors.
local feed_names, feed_texts, feeds, feeds_hidden = {}, {}, {}, {}
-- Whether the followed hashtags leave the page to the script as well as to Python: none
-- followed, or (one server) every one counted and every feed pulled found, so that the
-- script read what the page's round would (tag_plan pulls by the same counts).
local outboxes_found, tags_decided = #found - 1, follows_tags == 0
if follows_tags == 1 then
  local names = {}
  for _, name in ipairs(redis.call('SMEMBERS', KEYS[6])) do
    if string.sub(name, 1, 1) == '#' then tag_followed[string.sub(name, 2)] = true
    elseif name ~= ARGV[5] then names[#names + 1] = name end
  end
  -- not loaded, or loaded by a version that kept no numbers: reloaded, the numbers added
  if redis.call('SISMEMBER', KEYS[6], ARGV[5]) == 0 or (#names > 0 and not next(tag_followed)) then
    return 'tags'
  end
  local tagged = read(KEYS[5])
  if not tagged then return 'tagged' end
  renew(KEYS[5])
  tagged_text = table.concat(tagged, ',')
  found[#found + 1] = tagged
  local counts, flags = {}, {}
  if here and #names > 0 then
    counts = redis.call('HMGET', KEYS[8], unpack(names))
    flags = redis.call('HMGET', KEYS[9], unpack(names))
  end
  for i, name in ipairs(names) do
    states[i] = here and (name .. '=' .. (counts[i] or '') .. '=' .. (flags[i] and 1 or 0)) or name
  end
  local tagged_authors, listed = {}, {}
  for i = 2, #tagged do
    local author = string.match(tagged[i], ':(%d+)#')
    if author and not listed[author] then
      listed[author] = true
      tagged_authors[#tagged_authors + 1] = author
    end
  end
  tagged_hidden = hidden_among(KEYS[4], tagged_authors, '', now)
  for _, author in ipairs(tagged_hidden) do tag_hidden[author] = true end
  if ARGV[11] then
    local pull_at = tonumber(ARGV[12])
    for i, name in ipairs(names) do
      local followers = counts[i] and tonumber(counts[i])
      if not followers or flags[i] or (pull_at and followers >= pull_at) then
        local key = ARGV[11] .. name .. '}'
        local read_ = read(key)
        feed_names[#feed_names + 1] = name
        feed_texts[#feed_texts + 1] = read_ and table.concat(read_, ',') or ''
        if read_ then
          renew(key)
          feeds[#feeds + 1] = read_
          found[#found + 1] = read_
        end
      end
    end
    feeds_hidden = hidden_among(KEYS[4], entry_authors(feeds, {}), '', now)
    tags_decided = #feeds == #feed_names
    for i = 1, #names do
      if not counts[i] then tags_decided = false end
    end
  end
end
-- The text of the reply (above), built only when the page is left to Python.
local function reply_text()
  local out = {
    table.concat(home, ','), table.concat(pulled, ','), table.concat(unfollowed, ','),
    table.concat(hidden_originals, ','), table.concat(hidden_boosters, ','), bound,
    follows_tags, tagged_text, table.concat(states, ','), table.concat(tagged_hidden, ','),
    redis.call('GET', filter_version) or '', table.concat(feed_names, ','),
    table.concat(feeds_hidden, ','),
  }
  for _, outbox in ipairs(outboxes) do
    out[#out + 1] = outbox and table.concat(outbox, ',') or ''
  end
  for _, text in ipairs(feed_texts) do out[#out + 1] = text end
  return table.concat(out, ';')
end
if not ARGV[8] then return reply_text() end
local gone = {}
for _, author in ipairs(unfollowed) do gone[author] = true end
local rule, boosts = noting_boosts(page_rule(function(author) return gone[author] end,
  hidden_originals, hidden_boosters))  -- boosts: those the merge shows, by post id
-- A post a pulled hashtag's feed holds is shown, from any source, unless its author is
-- hidden from the reader (it has the same author wherever it is).
local in_feeds, hidden_in_feeds = {}, {}  -- post id: whether shown; author: true
for _, author in ipairs(feeds_hidden) do hidden_in_feeds[author] = true end
for _, read_ in ipairs(feeds) do
  for i = 2, #read_ do
    local post, author = string.match(read_[i], '^(%d+):(%d+)$')
    if post then in_feeds[post] = not hidden_in_feeds[author] end
  end
end
local function shown(entry)
  if not string.find(entry, '#', 1, true) then  -- a home's, an outbox's, a hashtag feed's
    local post = string.match(entry, '^(%d+):')
    if in_feeds[post] ~= nil then return in_feeds[post] and post or nil end
    return rule(entry)
  end
  local post, author, tag = string.match(entry, '^(%d+):(%d+)#(.+)$')
  if tag_followed[tag] and not tag_hidden[author] then return post end
  return nil
end
local count, prefetch = tonumber(ARGV[3]), tonumber(ARGV[9])
local ids = merged_ids(found, shown, prefetch)
local reply = with_cached({''}, ARGV[8], ids)  -- its text once the page is Python's
-- With ARGV[10] '1', the page itself (decided_answer) when nothing is left for Python to
-- decide: on one server, every outbox found, the hashtags decided (``tags_decided``), the
-- home and the outboxes read to ``bound``, the tagged set and the feeds a page deep. Else
-- the reply goes to Python's path.
if ARGV[10] == '1' and here and tags_decided and outboxes_found == #pulled + 1 then
  local reads, lower = {{home}}, bound ~= '' and tonumber(bound) - 1 or nil
  for i = 2, #found do reads[i] = {found[i], i <= outboxes_found + 1 and lower or nil} end
  local answer = decided_answer(reads, count, prefetch, ids, {unpack(reply, 3)}, boosts, home,
    #found - 1)
  if answer then return answer end
end
reply[1] = reply_text()
return reply
