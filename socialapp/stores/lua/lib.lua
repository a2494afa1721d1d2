-- Prepended to every timeline script. A timeline holds entries ordered by post id and a
-- floor: it is complete for every id above it (+inf while it is being rebuilt: trust
-- nothing, trim nothing; 0: all history). Scripts see each entry as the text member
-- "post_id:author_id" (a boost: "post_id:original_id:original_author:author_id"), which is
-- what read() returns after the floor, so page scripts and Python parse text; how it is
-- stored is this library's alone.
--
-- Compact encoding (every timeline: homes, tagged sets, outboxes, list feeds, shared feeds): a
-- hash per timeline, its
-- fields 'f' (the floor, text), 'n' (entries), the head bucket (the newest entries) stored
-- in two fields, 'd' (its newest few records) then 'h' (the rest), numbered buckets below
-- it, and 'x' (the index: per bucket newest first its number, 0 for the head, and a post id
-- at or below its oldest entry and above the next bucket's entries, packed '>I4I7'). A
-- bucket holds up to BUCKET * RECORD bytes of fixed-width records, newest
-- first: post id (7 bytes, big-endian), a byte of flags and the author's top 5 bits, the
-- author's low 48 bits. A boost is two records: its own (flag BOOST, the booster as author)
-- then the boosted post and its author (flag ORIGINAL). A tagged set's entry (a post a
-- followed hashtag brought, text "post_id:author_id#tag_id") is one record of its own width,
-- TAGGED_RECORD: the post's (flag TAG) then the tag's number (4 bytes); a tagged set holds
-- nothing else, so its buckets step by that width as a home's step by RECORD (width_of). An
-- entry there is a post and a tag, so a post two followed tags brought is two entries,
-- adjacent, the higher tag number first. A bucket of 145 records is 2,030 bytes (112 tagged
-- records, 2,016), just under a 2 KB allocation: about 15 bytes of Redis an entry (a tagged
-- one about 20) where a sorted set member cost 130 to 180. A delivery to a home, a tagged set or
-- a list's feed is one LPUSHX onto its pending list (see pending_of), and its fold prepends the
-- entries to 'd' alone while the head has room, so 'd' there may hold most of the head.
-- Elsewhere (an outbox, a shared feed) a delivery (nearly always the newest entry) prepends to
-- 'd' (one HMGET, one HSET of a few hundred bytes at most: a script's cost grows with the bytes
-- it moves, some 11 instructions a byte for each string it makes, and rewriting a 2 KB head each
-- time cost a delivery half again as much); once 'd' holds PENDING records the next delivery
-- rewrites the whole head, leaving its newest entry in 'd' and 'h' at most BUCKET - PENDING
-- records, so 'd' can grow to PENDING without the head passing BUCKET. A full head moves to a
-- numbered bucket, a trim cuts the tail bucket, a page reads the buckets that hold it, a retraction
-- rewrites the bucket holding it, an unmerge (remove_author) reads every bucket and rewrites those
-- holding the author's entries; adding many entries at once (creating, rebuilding, a backfill:
-- merge) rewrites the buckets their ids fall in.
--
-- The old text encoding, a sorted set of text members scored by post id plus the member
-- 'floor' scored by the floor: a timeline key found in it (a server upgraded with timelines
-- in Redis) is converted the first time it is touched, its TTL kept; a tagged set, whose
-- members named their tag, is dropped with its pending list and reads as missing (rebuilt).
-- So is a tagged set in the previous compact form (an entry two records, the first flagged
-- EARLIER_TAGGED), found by its head's first record or an entry in its pending list (pushed
-- by a server of that version while versions mixed).
--
-- Single-key scripts work on KEYS[1]; the *_many scripts loop over KEYS. TimelineScripts
-- defines TTL (seconds), BUCKET, FOLD, PENDING_SUFFIX (a home's pending list: below) and
-- the key prefixes above this library. Creating or rebuilding a timeline sets its TTL, and
-- reading a home renews it (deliveries do not: that would cost a command per follower), so
-- an idle reader's home expires. Only timelines that can be rebuilt carry a TTL, which is what a
-- volatile-* eviction policy evicts.
local SENTINEL = 'floor'
local key = KEYS[1]
local RECORD = 14  -- BUCKET (RECORD-byte records a bucket holds) is defined above, as TTL is
local TAGGED_RECORD = RECORD + 4  -- a tagged set's: the post's record and the tag's number
-- Records 'd' takes before a delivery rewrites the head (fewer in the tests' small buckets)
local PENDING = math.min(16, math.floor(BUCKET / 2))
-- Flags, in a record's 8th byte above the author's top 5 bits. EARLIER_TAGGED (BOOST and
-- ORIGINAL both) began a tagged entry's two records in the previous form: a set holding one
-- is dropped.
local BOOST, ORIGINAL, TAG = 128, 64, 32
local EARLIER_TAGGED = BOOST + ORIGINAL
local HIGH = 2 ^ 48
local INDEX = 11  -- bytes an index item takes

-- A timeline is trimmed to its cap once it holds more than cap + slack(cap) entries: a
-- sixteenth of the cap cut at once, so a delivery to a full timeline rewrites its tail
-- bucket once in cap / 16 deliveries rather than each time (small caps are kept exactly).
local function slack(cap)
  return math.floor(cap / 16)
end

local function is_tagged(key)
  return string.sub(key, 1, #TAGGED_PREFIX) == TAGGED_PREFIX
end

-- A home's, tagged set's or list feed's pending deliveries: a list beside it (same hash tag, so one
-- Cluster slot; SCAN home:* finds both), newest first, each element one entry (a home's: its
-- records), the last element the sentinel (a list cannot be empty): the cap as text. A delivery is
-- one LPUSHX, which only writes while the list exists, so its existence is the timeline's: the two
-- are created, renewed, dropped and rebuilt together, the timeline marked (field 'p') to say its
-- list exists. A marked timeline without its list (evicted, expired apart) may have lost deliveries
-- and reads as missing; so does a list without its timeline. One without the mark was written
-- before it had a list and takes deliveries directly, as it did, until its next creation or
-- rebuild. Every load() folds the pending entries in, in the order they came, each as a delivery
-- would have (dropped at or below a finite floor, each post once, trimmed to the cap), and empties
-- the list; a delivery folds once the list holds FOLD entries (defined above), so it stays small.
local function pending_of(key)
  if string.sub(key, 1, #HOME_PREFIX) == HOME_PREFIX or is_tagged(key)
      or string.sub(key, 1, #LIST_PREFIX) == LIST_PREFIX then
    return key .. PENDING_SUFFIX
  end
  return nil
end

local function renew(key)
  redis.call('EXPIRE', key, TTL)
  local pending = pending_of(key)
  if pending then redis.call('EXPIRE', pending, TTL) end
end

-- The floor as stored and returned: an integer's digits, 'inf', or a fraction's shortest
-- exact text.
local function floor_text_of(value)
  if value == math.huge then return 'inf' end
  return string.format('%.17g', value)
end

-- Entries: {post, author, original, original_author, tag} (original 0: not a boost; tag:
-- a tagged set's entry's tag id, else nil).

-- A member's post id and author as text, and a boost's original and its author (nil for
-- a post); nil for a member of neither form. A post is matched first: most entries are posts,
-- and a page parses each it shows (a pattern match costs about a microsecond).
local function parts_of(member)
  local post, author = string.match(member, '^(%d+):(%d+)$')
  if post then return post, author end
  local original, original_author
  post, original, original_author, author = string.match(member, '^(%d+):(%d+):(%d+):(%d+)$')
  return post, author, original, original_author
end

local function entry_of(member)
  local post, author, original, original_author = parts_of(member)
  if post then
    return {tonumber(post), tonumber(author), tonumber(original) or 0,
      tonumber(original_author) or 0}
  end
  local tag
  post, author, tag = string.match(member, '^(%d+):(%d+)#(%d+)$')
  return {tonumber(post), tonumber(author), 0, 0, tonumber(tag)}
end

local function text_of(post, author, original, original_author, tag)
  if tag then return string.format('%d:%d#%d', post, author, tag) end
  if original == 0 then return string.format('%d:%d', post, author) end
  return string.format('%d:%d:%d:%d', post, original, original_author, author)
end

local function member_of(entry)
  return text_of(entry[1], entry[2], entry[3], entry[4], entry[5])
end

-- Whether entry ``a`` sorts before ``b`` (newest first; a post's tags highest first), and
-- whether the two are one entry (a post, and in a tagged set its tag).
local function before(a, b)
  return a[1] > b[1] or (a[1] == b[1] and (a[5] or 0) > (b[5] or 0))
end

local function same(a, b)
  return a[1] == b[1] and a[5] == b[5]
end

local function record(post, author, flags)
  local high = math.floor(author / HIGH)
  return struct.pack('>I7BI6', post, flags + high, author - high * HIGH)
end

local function encode(entry)
  if entry[5] then return record(entry[1], entry[2], TAG) .. struct.pack('>I4', entry[5]) end
  if entry[3] == 0 then return record(entry[1], entry[2], 0) end
  return record(entry[1], entry[2], BOOST) .. record(entry[3], entry[4], ORIGINAL)
end

local function encode_all(entries, first, last)
  local parts = {}
  for i = first, last do parts[#parts + 1] = encode(entries[i]) end
  return table.concat(parts)
end

-- The record at byte ``at``: post id, author, flags.
local function record_at(bucket, at)
  local post, high, low = struct.unpack('>I7BI6', bucket, at)
  return post, (high % 32) * HIGH + low, high - high % 32
end

local function post_at(bucket, at)
  return (struct.unpack('>I7', bucket, at))
end

-- The tag number of the tagged record at byte ``at``.
local function tag_at(bucket, at)
  return (struct.unpack('>I4', bucket, at + RECORD))
end

local function flags_at(bucket, at)
  local byte = string.byte(bucket, at + 7)
  return byte - byte % 32
end

-- The width of ``bucket``'s records (a tagged set's or any other timeline's): the records
-- of a boost or an entry found go in steps of it.
local function width_of(bucket)
  return (#bucket > 0 and flags_at(bucket, 1) == TAG) and TAGGED_RECORD or RECORD
end

-- The entry starting at byte ``at`` and the byte after it.
local function entry_at(bucket, at)
  local post, author, flags = record_at(bucket, at)
  if flags == 0 then return {post, author, 0, 0}, at + RECORD end
  if flags == TAG then return {post, author, 0, 0, tag_at(bucket, at)}, at + TAGGED_RECORD end
  local original, original_author = record_at(bucket, at + RECORD)
  return {post, author, original, original_author}, at + 2 * RECORD
end

local function entries_of(bucket)
  local found, at = {}, 1
  while at <= #bucket do
    found[#found + 1], at = entry_at(bucket, at)
  end
  return found
end

-- The bytes ``entry``'s records take.
local function bytes_of(entry)
  if entry[5] then return TAGGED_RECORD end
  return entry[3] == 0 and RECORD or 2 * RECORD
end

-- Whether a timeline (``tagged``: a tagged set) is a tagged set in the previous compact form,
-- by its head (``head``, its newest records): dropped then. (Its pending entries are told by
-- their width, in fold().)
local function two_record_tagged(tagged, head)
  return tagged and head and #head > 0 and flags_at(head, 1) == EARLIER_TAGGED
end

-- Give the home, tagged set or list feed ``key`` a new, empty pending list (``cap``: the
-- sentinel) and mark it.
local function start_pending(key, cap)
  local pending = pending_of(key)
  if not pending then return end
  redis.call('DEL', pending)
  redis.call('RPUSH', pending, cap)
  redis.call('HSET', key, 'p', 1)
end

-- A compact timeline loaded: its floor, entries, index (ids, lows) and the buckets read so
-- far (by id); what changed is written back by save().

local function convert(key)
  local ttl = redis.call('PTTL', key)
  local members = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  redis.call('DEL', key)
  return members, ttl
end

local rewrite, fill, fold

-- Drop the tagged set ``key`` left in an earlier form, and its pending list: nil, as a
-- missing set reads (rebuilt by its reader).
local function drop_earlier(key)
  redis.call('DEL', key, pending_of(key))
  return nil
end

-- A head's newest records: 'd', or 'h' in a head written before 'd' was kept.
local function newest_of(d, h)
  return (d and #d > 0) and d or h
end

-- An empty timeline not yet written (floor and index to save). Every timeline's 'd' and 'h' are
-- its head's two fields as read, '' here: bucket_of() makes the head's bucket (id 0) of them.
local function new_timeline(key, floor)
  return {key = key, floor = floor, n = 0, ids = {}, lows = {}, buckets = {}, gone = {},
    changed = {}, floor_changed = true, index_changed = true, d = '', h = ''}
end

local function load(key)
  local found = redis.pcall('HMGET', key, 'f', 'n', 'x', 'h', 'd', 'p')
  if found.err then  -- the old encoding: a sorted set of text members
    if is_tagged(key) then return drop_earlier(key) end  -- members naming their tag
    local members, ttl = convert(key)
    local floor, entries = nil, {}
    for i = 1, #members, 2 do
      if members[i] == SENTINEL then floor = tonumber(members[i + 1])
      else entries[#entries + 1] = entry_of(members[i]) end
    end
    if not floor then return nil end
    local t = new_timeline(key, floor)
    table.sort(entries, function(a, b) return a[1] > b[1] end)
    rewrite(t, entries)
    if ttl > 0 then t.ttl = ttl end
    return t
  end
  if not found[1] then return nil end
  local pending = pending_of(key)
  if pending then  -- a home: its list gone while marked 'p', the home is incomplete
    pending = redis.call('LRANGE', pending, 0, -1)  -- (an unmarked home's list, made
    if found[6] and #pending == 0 then return nil end  -- while versions mixed, is folded)
  end
  local tagged = is_tagged(key)
  if two_record_tagged(tagged, newest_of(found[5], found[4])) then return drop_earlier(key) end
  local t = {key = key, floor = tonumber(found[1]), n = tonumber(found[2]), ids = {},
    lows = {}, buckets = {}, gone = {}, changed = {}, d = found[5] or '', h = found[4] or ''}
  local index = found[3] or ''
  for at = 1, #index, INDEX do
    t.ids[#t.ids + 1], t.lows[#t.lows + 1] = struct.unpack('>I4I7', index, at)
  end
  if pending and #pending > 1 and not fold(t, pending, tagged and TAGGED_RECORD) then
    return drop_earlier(key)
  end
  return t
end

-- Bucket ``i`` of the index. The head (id 0) is made from the fields 'd' and 'h' load() read
-- only when a script asks for it: a fold that prepends to 'd' makes no string of it (a string
-- made in a script costs some 11 instructions a byte, a head up to 2 KB).
local function bucket_of(t, i)
  local id = t.ids[i]
  if not t.buckets[id] then
    if id == 0 then t.buckets[0] = t.d .. t.h
    else t.buckets[id] = redis.call('HGET', t.key, tostring(id)) or '' end
  end
  return t.buckets[id]
end

-- Read the buckets at positions ``indexes`` of the index not read yet, in one HMGET.
local function load_buckets(t, indexes)
  local names, missing = {}, {}
  for _, i in ipairs(indexes) do
    local id = t.ids[i]
    if id == 0 then
      bucket_of(t, i)
    elseif not t.buckets[id] then
      names[#names + 1], missing[#missing + 1] = tostring(id), id
    end
  end
  if #names == 0 then return end
  for i, value in ipairs(redis.call('HMGET', t.key, unpack(names))) do
    t.buckets[missing[i]] = value or ''
  end
end

local function load_all(t)
  local indexes = {}
  for i = 1, #t.ids do indexes[i] = i end
  load_buckets(t, indexes)
end

local function set_bucket(t, i, value)
  t.buckets[t.ids[i]], t.changed[t.ids[i]] = value, true
end

local function drop_bucket(t, i)
  t.gone[#t.gone + 1] = t.ids[i]
  t.buckets[t.ids[i]] = nil
  table.remove(t.ids, i)
  table.remove(t.lows, i)
  t.index_changed = true
end

local function new_id(t)
  local id = 0
  for _, used in ipairs(t.ids) do id = math.max(id, used) end
  for _, used in ipairs(t.gone) do id = math.max(id, used) end
  return id + 1
end

-- ``entries`` (newest first) cut into buckets of at most BUCKET * RECORD bytes, full from
-- the oldest, the newest holding the remainder: {first, last} ranges of ``entries``, newest
-- first.
local function groups_of(entries)
  local groups, bytes, last = {}, 0, #entries
  for i = #entries, 1, -1 do
    local size = bytes_of(entries[i])
    if bytes + size > BUCKET * RECORD then
      table.insert(groups, 1, {i + 1, last})
      bytes, last = 0, i
    end
    bytes = bytes + size
  end
  if last >= 1 then table.insert(groups, 1, {1, last}) end
  return groups
end

-- Make bucket ``i`` hold ``entries`` (newest first, at least one), its low ``low``: as one
-- bucket, or split into groups_of() them, the newest keeping the bucket's id and the older
-- ones new buckets after it, the oldest with ``low``.
fill = function(t, i, entries, low)
  local groups, next_id = groups_of(entries), nil
  for g, group in ipairs(groups) do
    local at = i + g - 1
    if g > 1 then
      next_id = next_id or new_id(t)
      table.insert(t.ids, at, next_id)
      table.insert(t.lows, at, 0)
      next_id = next_id + 1
    end
    t.lows[at] = g == #groups and low or entries[group[2]][1]
    set_bucket(t, at, encode_all(entries, group[1], group[2]))
  end
  t.index_changed = true
end

-- Replace the timeline's entries by ``entries`` (newest first, each post once): full
-- buckets from the oldest, the head holding the newest remainder for deliveries to fill.
rewrite = function(t, entries)
  for i = #t.ids, 1, -1 do drop_bucket(t, i) end
  t.n, t.index_changed = #entries, true
  if #entries == 0 then return end
  t.ids[1], t.lows[1] = 0, 0
  fill(t, 1, entries, entries[#entries][1])
end

-- The head as stored: 'd' its newest entry and the records past (BUCKET - PENDING) * RECORD
-- bytes, 'h' the rest (a boost's two records stay together).
local function head_parts(value)
  local width = width_of(value)
  local rest = math.floor((BUCKET - PENDING) * RECORD / width) * width
  local cut = math.max(#value - rest, width)
  if cut < #value then
    local _, _, flags = record_at(value, cut + 1)
    if flags == ORIGINAL then cut = cut + RECORD end
  end
  return string.sub(value, 1, cut), string.sub(value, cut + 1)
end

local function save(t)
  if #t.ids > 0 and t.ids[1] ~= 0 then  -- the head emptied: the next bucket becomes it
    local value = bucket_of(t, 1)
    t.gone[#t.gone + 1] = t.ids[1]
    t.ids[1], t.buckets[0], t.changed[0], t.index_changed = 0, value, true, true
  end
  local kept = {}
  for _, id in ipairs(t.ids) do kept[id] = true end
  local gone = {}
  for _, id in ipairs(t.gone) do
    if not kept[id] then
      if id == 0 then gone[#gone + 1], gone[#gone + 2] = 'd', 'h'
      else gone[#gone + 1] = tostring(id) end
    end
  end
  local fields = {'n', t.n}
  if t.floor_changed then fields[#fields + 1], fields[#fields + 2] = 'f', floor_text_of(t.floor) end
  if t.index_changed then
    local index = {}
    for i, id in ipairs(t.ids) do index[i] = struct.pack('>I4I7', id, t.lows[i]) end
    fields[#fields + 1], fields[#fields + 2] = 'x', table.concat(index)
  end
  for id in pairs(t.changed) do
    if kept[id] and id == 0 and not t.buckets[0] then  -- a fold's prepend to 'd' alone
      fields[#fields + 1], fields[#fields + 2] = 'd', t.d
    elseif kept[id] and id == 0 then
      local newest, rest = head_parts(t.buckets[0])
      fields[#fields + 1], fields[#fields + 2] = 'd', newest
      if #rest > 0 then fields[#fields + 1], fields[#fields + 2] = 'h', rest
      else gone[#gone + 1] = 'h' end
    elseif kept[id] then
      fields[#fields + 1], fields[#fields + 2] = tostring(id), t.buckets[id]
    end
  end
  if #gone > 0 then redis.call('HDEL', t.key, unpack(gone)) end
  redis.call('HSET', t.key, unpack(fields))
  if t.ttl then redis.call('PEXPIRE', t.key, t.ttl) end
  if t.folded then redis.call('LTRIM', pending_of(t.key), -1, -1) end  -- the sentinel stays
end

-- The bucket that holds (or would hold) post id ``post``.
local function locate(t, post)
  for i = 1, #t.ids do
    if t.lows[i] <= post then return i end
  end
  return #t.ids
end

-- Whether the bucket after bucket ``i`` holds ``entry``: a post's entries (a tagged set's,
-- one a tag) may go on there when bucket ``i``'s low is the post (its newest entries).
local function held_next(t, i, entry)
  if entry[1] ~= t.lows[i] or i >= #t.ids then return false end
  for _, held in ipairs(entries_of(bucket_of(t, i + 1))) do
    if held[1] ~= entry[1] then return false end
    if same(held, entry) then return true end
  end
  return false
end

-- Insert one entry (a delivery) unless its post is held; whether it was added.
local function insert(t, entry)
  local post = entry[1]
  if #t.ids == 0 then
    t.ids[1], t.lows[1], t.index_changed = 0, post, true
    set_bucket(t, 1, encode(entry))
    t.n = t.n + 1
    return true
  end
  local i = locate(t, post)
  local bucket = bucket_of(t, i)
  local value, newest = nil, i == 1 and (#bucket == 0 or post > post_at(bucket, 1))
  if newest then
    value = encode(entry) .. bucket
  else
    local entries, at = entries_of(bucket), nil
    for j, held in ipairs(entries) do
      if same(held, entry) then return false end
      if before(entry, held) then
        at = j
        break
      end
    end
    if held_next(t, i, entry) then return false end
    table.insert(entries, at or #entries + 1, entry)
    value = encode_all(entries, 1, #entries)
    if #value > BUCKET * RECORD then  -- split in two: the older half becomes a new bucket
      local half, bytes = #entries, 0
      for j = #entries, 1, -1 do
        bytes = bytes + bytes_of(entries[j])
        if bytes * 2 > #value then break end
        half = j
      end
      local id = new_id(t)
      table.insert(t.ids, i + 1, id)
      table.insert(t.lows, i + 1, math.min(t.lows[i], post))
      t.buckets[id], t.changed[id] = encode_all(entries, half, #entries), true
      t.lows[i], t.index_changed = entries[half - 1][1], true
      set_bucket(t, i, encode_all(entries, 1, half - 1))
      t.n = t.n + 1
      return true
    end
  end
  if post < t.lows[i] then t.lows[i], t.index_changed = post, true end
  if #value > BUCKET * RECORD then  -- a full head: it moves below, a new head begins
    local id = new_id(t)
    table.insert(t.ids, 2, id)
    table.insert(t.lows, 2, t.lows[1])
    t.buckets[id], t.changed[id] = bucket, true
    t.lows[1], t.index_changed = post, true
    value = encode(entry)
  end
  set_bucket(t, i, value)
  t.n = t.n + 1
  return true
end

-- Past cap + slack(cap) entries keep cap; the floor rises to the highest post id removed,
-- never lowers. The oldest entries are cut from the end of the tail bucket: a tagged set's
-- by arithmetic (each its own width), a home's a record at a time (a boost takes two), and
-- the newest entry cut, the bucket's first after what stays, is its highest.
local function cut_oldest(t, excess)
  local highest
  while excess > 0 and #t.ids > 0 do
    local i = #t.ids
    local bucket = bucket_of(t, i)
    local cut = #bucket
    if width_of(bucket) == TAGGED_RECORD then
      local taken = math.min(excess, math.floor(cut / TAGGED_RECORD))
      cut, excess, t.n = cut - taken * TAGGED_RECORD, excess - taken, t.n - taken
    end
    while excess > 0 and cut > 0 do
      local at = cut - RECORD + 1
      if flags_at(bucket, at) == ORIGINAL then at = at - RECORD end
      cut, excess, t.n = at - 1, excess - 1, t.n - 1
    end
    if cut < #bucket then
      local post = post_at(bucket, cut + 1)
      if not highest or post > highest then highest = post end
    end
    if cut == 0 then drop_bucket(t, i) else set_bucket(t, i, string.sub(bucket, 1, cut)) end
  end
  if highest and highest > t.floor then t.floor, t.floor_changed = highest, true end
end

local function trim_compact(t, cap)
  if t.floor == math.huge or t.n <= cap + slack(cap) then return end
  cut_oldest(t, t.n - cap)
end

-- One delivery of ``entry``: kept above a finite floor, each post once, then trimmed;
-- whether it was added.
local function add_one(t, entry, cap)
  local added = (t.floor == math.huge or entry[1] > t.floor) and insert(t, entry)
  if added then trim_compact(t, cap) end
  return added
end

-- Fold a home's pending entries (``pending``: its list, newest first, the cap last) in,
-- oldest first, each as deliver_one() would have added it; marked for save() to write back.
-- The usual fold, each entry newer than the last (or at or below the floor), is one
-- prepend to the head: the list's own elements concatenated before 'd' (the head's newest
-- records), 'h' left as it is while the head holds them all, and no entry decoded but for
-- its post id. Trims are counted as one delivery at a time would have made them (each cuts
-- the oldest, which the newer entries never are until the older are gone), then cut at
-- once. ``width``: the bytes every entry folded in must take (a tagged set's), or nil; false,
-- and nothing folded, when one does not (pushed by a server of the previous form): told by
-- the entries' total length, no look at each. Only load() calls it, before anything has made
-- the head's bucket: so 't.d' is the head's newest records, and stays so while no one does.
fold = function(t, pending, width)
  local cap, last, floor = tonumber(pending[#pending]), #pending - 1, t.floor
  local finite = floor ~= math.huge
  local newest = #t.d > 0 and t.d or t.h  -- the head's first records (no 'd': written before it)
  local top, fresh, oldest, dropped, late = #newest > 0 and post_at(newest, 1) or -1, 0, nil, nil
  for i = last, 1, -1 do
    local post = struct.unpack('>I7', pending[i])
    if finite and post <= floor then
      dropped = dropped or {}
      dropped[i] = true
    elseif post > top then
      top, fresh, oldest = post, fresh + 1, oldest or post
    else  -- late or again
      late = true
    end
  end
  t.folded, t.floor_changed = true, true  -- every caller saves a changed floor
  if late then  -- one at a time
    for j = last, 1, -1 do
      if width and #pending[j] ~= width then return false end
    end
    for j = last, 1, -1 do add_one(t, entry_at(pending[j], 1), cap) end
    return true
  end
  if fresh == 0 then return true end
  local added = pending
  if dropped then
    added = {}
    for i = 1, last do
      if not dropped[i] then added[#added + 1] = pending[i] end
    end
    last = #added
  end
  added = table.concat(added, '', 1, last)
  if width and #added ~= last * width then return false end
  local held = #t.ids > 0 and #t.d + #t.h or 0
  if #t.ids == 0 then t.ids[1], t.lows[1], t.index_changed = 0, oldest, true end
  if held + #added <= BUCKET * RECORD then
    t.d, t.changed[0] = added .. t.d, true
  elseif held > 0 and #added <= BUCKET * RECORD then
    local id = new_id(t)  -- as insert() does: the head moves below, a new head begins
    table.insert(t.ids, 2, id)
    table.insert(t.lows, 2, t.lows[1])
    t.buckets[id], t.changed[id] = bucket_of(t, 1), true
    t.lows[1], t.index_changed = oldest, true
    set_bucket(t, 1, added)
  else
    fill(t, 1, entries_of(added .. bucket_of(t, 1)), t.lows[1])
  end
  local n = t.n
  t.n = t.n + fresh
  if not finite then return true end
  for _ = 1, fresh do
    n = n + 1
    if n > cap + slack(cap) then n = cap end
  end
  if n < t.n then cut_oldest(t, t.n - n) end
  return true
end

-- Merge ``entries`` (any order) into the timeline's, each post once, entries at or below a
-- finite floor dropped, then trim to cap. Only the buckets whose id range receives entries
-- are read (one HMGET) and rewritten, so a backfill of older entries touches the tail: an
-- entry goes to the bucket locate() names, and a bucket grown past BUCKET records is split.
local function merge(t, entries, cap)
  local new, seen = {}, {}
  for _, entry in ipairs(entries) do
    local id = entry[5] and member_of(entry) or entry[1]
    if (t.floor == math.huge or entry[1] > t.floor) and not seen[id] then
      seen[id], new[#new + 1] = true, entry
    end
  end
  if #new == 0 then return trim_compact(t, cap) end
  if #new == 1 then
    insert(t, new[1])
    return trim_compact(t, cap)
  end
  table.sort(new, before)
  local i, unheld = 1, {}
  for _, entry in ipairs(new) do  -- less those held in the bucket after their own
    while i < #t.ids and t.lows[i] > entry[1] do i = i + 1 end
    if entry[1] ~= t.lows[i] or not held_next(t, i, entry) then unheld[#unheld + 1] = entry end
  end
  new = unheld
  if #t.ids == 0 then
    t.ids[1], t.lows[1], t.buckets[0], t.index_changed = 0, new[#new][1], '', true
  end
  local targets = {}  -- {bucket, first, last}: new[first..last] go to that bucket
  i = 1
  for k, entry in ipairs(new) do
    while i < #t.ids and t.lows[i] > entry[1] do i = i + 1 end
    local target = targets[#targets]
    if target and target[1] == i then target[3] = k else targets[#targets + 1] = {i, k, k} end
  end
  local wanted = {}
  for g, target in ipairs(targets) do wanted[g] = target[1] end
  load_buckets(t, wanted)
  for g = #targets, 1, -1 do  -- from the oldest: a split inserts buckets after its own
    local at, first, last = targets[g][1], targets[g][2], targets[g][3]
    local held, merged, a, b = entries_of(t.buckets[t.ids[at]]), {}, 1, first
    while a <= #held or b <= last do
      local take
      if b > last or (a <= #held and not before(new[b], held[a])) then
        take, a = held[a], a + 1
      else
        take, b = new[b], b + 1
      end
      if #merged == 0 or not same(merged[#merged], take) then merged[#merged + 1] = take end
    end
    t.n = t.n + #merged - #held
    fill(t, at, merged, math.min(t.lows[at], new[last][1]))
  end
  trim_compact(t, cap)
end

-- The engine.

-- The timeline's floor (a number) and its text; nil when it does not exist.
local function read_floor(key)
  local t = load(key)
  if not t then return nil, nil end
  if t.floor_changed then save(t) end  -- converted from the old encoding
  return t.floor, floor_text_of(t.floor)
end

-- The entries ARGV[first], ARGV[first + 1], ... (score, member pairs) as entries.
local function argv_entries(first)
  local entries = {}
  for i = first, #ARGV, 2 do entries[#entries + 1] = entry_of(ARGV[i + 1]) end
  return entries
end

-- merge() of the entries ARGV[3..], then save.
local function merge_args(t, cap)
  merge(t, argv_entries(3), cap)
  save(t)
end

-- Whether the timeline exists and is whole: not one marked as having a pending list that
-- is gone, nor a tagged set in the old encoding.
local function whole(key)
  if redis.call('EXISTS', key) == 0 then return false end
  local pending = pending_of(key)
  if not pending then return true end
  local marked = redis.pcall('HEXISTS', key, 'p')  -- an error: the old encoding, a zset
  if type(marked) == 'table' then return not is_tagged(key) end
  if is_tagged(key) then  -- the previous compact form is replaced too
    local head = redis.call('HMGET', key, 'd', 'h')
    if two_record_tagged(true, newest_of(head[1], head[2])) then return false end
  end
  return marked ~= 1 or redis.call('EXISTS', pending) == 1
end

-- Create the timeline unless it exists (whole) with floor ARGV[2] and entries ARGV[3..],
-- trimmed to ARGV[1]; whether it was created.
local function create(key)
  if whole(key) then return 0 end
  local cap, floor = tonumber(ARGV[1]), tonumber(ARGV[2])
  redis.call('DEL', key)  -- one that lost its pending list
  merge_args(new_timeline(key, floor), cap)
  start_pending(key, cap)
  renew(key)
  return 1
end

-- Deliver one entry (score ``score``, text ``member``, ``entry`` its parse and ``encoded`` its
-- records) to an existing timeline as add() does; whether it exists. To a home, tagged set
-- or list feed, one LPUSHX onto its pending list (folded in by every load, and here once it
-- holds FOLD entries). To one written before it had a pending list, or another compact
-- timeline (an outbox, a shared feed), the usual
-- delivery: for a compact one the newest entry with room in 'd' and no trim due, or the
-- first into an empty timeline, is one HMGET and one HSET. ``held``: the length LPUSHX
-- already gave, if the caller pushed.
local function deliver_one(key, cap, score, member, entry, encoded, held)
  local pending = pending_of(key)
  if pending then  -- one LPUSHX, 0 when it has no list (none, or written before lists)
    held = held or redis.call('LPUSHX', pending, encoded)
    if held > FOLD then  -- FOLD entries and the sentinel: fold them into the buckets
      local t = load(key)
      if not t then  -- a list without its hash: gone with it (or with an old tagged set)
        redis.call('DEL', pending)
        return false
      end
      save(t)
    end
    if held > 0 then return true end
  end
  local found = redis.pcall('HMGET', key, 'f', 'n', 'd', 'p')
  if not found.err and not two_record_tagged(is_tagged(key), found[3]) then  -- (else load drops)
    if not found[1] or found[4] then return false end  -- no home, or it lost its list
    local floor, n, newest = tonumber(found[1]), tonumber(found[2]), found[3]
    if floor ~= math.huge and score <= floor then return true end
    if n == 0 then  -- empty: no bucket yet
      redis.call('HSET', key, 'd', encoded, 'n', 1, 'x', struct.pack('>I4I7', 0, score))
      return true
    end
    if newest and #newest > 0 and #newest + #encoded <= PENDING * RECORD
        and score > post_at(newest, 1) and (floor == math.huge or n < cap + slack(cap)) then
      redis.call('HSET', key, 'd', encoded .. newest, 'n', n + 1)
      return true
    end
  end
  local t = load(key)
  if not t then return false end
  if add_one(t, entry, cap) or t.floor_changed then save(t) end
  return true
end

-- What add() is asked when it is a delivery (one entry, ARGV[3] and ARGV[4], and no floor
-- to raise): the entry's score, member, parse and records, made once for every timeline
-- it goes to; nil when it is not.
local function delivery_args()
  if #ARGV ~= 4 or tonumber(ARGV[2]) ~= 0 then return nil end
  local entry = entry_of(ARGV[4])
  return {tonumber(ARGV[3]), ARGV[4], entry, encode(entry)}
end

-- Add the entries ARGV[3..] to an existing timeline, raising its floor to at least ARGV[2]
-- and trimming it to ARGV[1] entries; 0 (and nothing written) when it does not exist.
-- ``delivery``: delivery_args(), when the call is one.
local function add(key, delivery)
  local cap, raised = tonumber(ARGV[1]), tonumber(ARGV[2])
  if delivery then return deliver_one(key, cap, unpack(delivery)) and 1 or 0 end
  local t = load(key)
  if not t then return 0 end
  if t.floor ~= math.huge and raised > t.floor then t.floor, t.floor_changed = raised, true end
  merge_args(t, cap)
  return 1
end

-- Replace the timeline with an empty one that is being rebuilt (floor +inf).
-- A pending list (pending_of) starts with sentinel 0: nothing is trimmed while the floor
-- is +inf, and finish_rebuild sets the cap.
local function begin_rebuild(key)
  redis.call('DEL', key)
  redis.call('HSET', key, 'f', 'inf', 'n', 0)
  start_pending(key, 0)
  renew(key)
end

-- Add the rebuilt entries ARGV[3..], set the floor to ARGV[2] (never below a finite floor
-- already set) and trim to ARGV[1]; 0 (nothing written) when the timeline is gone.
local function finish_rebuild(key)
  local cap, floor = tonumber(ARGV[1]), tonumber(ARGV[2])
  local t = load(key)
  if not t then return 0 end
  if t.floor == math.huge or t.floor <= floor then t.floor, t.floor_changed = floor, true end
  merge_args(t, cap)
  start_pending(key, cap)  -- emptied by the fold: now with the cap (or new, an old one)
  renew(key)
  return 1
end

-- Take out the entries of the post ``member`` names (a deleted post: in a tagged set, under
-- every tag); how many were removed.
local function remove(key, member)
  local t = load(key)
  if not t then return 0 end
  local post, removed = tonumber(string.match(member, '^%d+')), 0
  local i = locate(t, post)
  while i >= 1 and i <= #t.ids do
    local low, entries, kept = t.lows[i], entries_of(bucket_of(t, i)), {}
    for _, entry in ipairs(entries) do
      if entry[1] ~= post then kept[#kept + 1] = entry end
    end
    removed, t.n = removed + #entries - #kept, t.n - #entries + #kept
    if #kept == 0 and #entries > 0 then drop_bucket(t, i)
    elseif #kept < #entries then set_bucket(t, i, encode_all(kept, 1, #kept)) end
    -- a post's entries (a tagged set's, one a tag) may go on in the next bucket: this one's
    -- low is then the post (held here or not, as after an unfollow took its entries here)
    if #entries == 0 or low ~= post then break end
    if #kept > 0 then i = i + 1 end
  end
  if removed > 0 or t.floor_changed then save(t) end
  return removed
end

-- Take out every entry whose member ends with ``suffix`` (":<author_id>", the author or
-- booster; in a tagged set "#<tag_id>", the tag); how many were removed. Only buckets
-- holding one are rewritten.
local function remove_author(key, suffix)
  local t = load(key)
  if not t then return 0 end
  local id, removed = tonumber(string.sub(suffix, 2)), 0
  local field = string.sub(suffix, 1, 1) == '#' and 5 or 2
  load_all(t)
  for i = #t.ids, 1, -1 do
    local entries, kept = entries_of(t.buckets[t.ids[i]]), {}
    for _, entry in ipairs(entries) do
      if entry[field] ~= id then kept[#kept + 1] = entry end
    end
    if #kept < #entries then
      removed, t.n = removed + #entries - #kept, t.n - #entries + #kept
      if #kept == 0 then drop_bucket(t, i) else set_bucket(t, i, encode_all(kept, 1, #kept)) end
    end
  end
  if removed > 0 or t.floor_changed then save(t) end
  return removed
end

-- A bound in ZRANGE BYSCORE syntax ('+inf', '-inf', '(id' exclusive, 'id' inclusive).
local function bound_of(text)
  if text == '+inf' or text == 'inf' then return math.huge, false end
  if text == '-inf' then return -math.huge, false end
  if string.sub(text, 1, 1) == '(' then return tonumber(string.sub(text, 2)), true end
  return tonumber(text), false
end

-- The byte in ``bucket`` where its first entry whose post id is below ``top`` (at or below
-- it, unless ``open``) starts, one past its end for none: a binary search of the records
-- (fixed-width; the record of a boosted post belongs to the boost's, just above it).
local function first_below(bucket, top, open)
  local width = width_of(bucket)
  local low, high = 0, #bucket / width  -- records: [low, high) holds the answer's start
  while low < high do
    local middle = math.floor((low + high) / 2)
    local _, _, flags = record_at(bucket, middle * width + 1)
    local start, finish = middle, middle + 1  -- the entry's records
    if flags == ORIGINAL then start = middle - 1 elseif flags == BOOST then finish = middle + 2 end
    local post = post_at(bucket, start * width + 1)
    if post < top or (post == top and not open) then high = start else low = finish end
  end
  return low * width + 1
end

-- {floor, members...} newest first with lower < post id < upper (bounds in ZRANGE syntax),
-- at most ``count`` members; false when the timeline does not exist. Only the buckets from
-- the one holding ``upper`` are read, and only the entries returned decoded.
local function read_range(key, upper, lower, count)
  local t = load(key)
  if not t then return false end
  if t.floor_changed then save(t) end
  local result = {floor_text_of(t.floor)}
  local top, top_open = bound_of(upper)
  local bottom, bottom_open = bound_of(lower)
  for i = 1, #t.ids do
    if #result > count then break end
    if t.lows[i] < top or (t.lows[i] == top and not top_open) then
      local bucket = bucket_of(t, i)
      local at = top == math.huge and 1 or first_below(bucket, top, top_open)
      top = math.huge  -- every later bucket is below this one's low
      while at <= #bucket and #result <= count do  -- no entry tables: a string each
        local post, author, flags = record_at(bucket, at)
        if post < bottom or (post == bottom and bottom_open) then return result end
        if flags == BOOST then
          local original, original_author = record_at(bucket, at + RECORD)
          result[#result + 1] = text_of(post, author, original, original_author)
          at = at + 2 * RECORD
        elseif flags == TAG then
          result[#result + 1] = text_of(post, author, 0, 0, tag_at(bucket, at))
          at = at + TAGGED_RECORD
        else
          result[#result + 1] = text_of(post, author, 0)
          at = at + RECORD
        end
      end
    end
  end
  return result
end

-- read_range with ARGV[1] (upper), ARGV[2] (lower; ``lower`` in its place if given) and
-- ARGV[3] (count).
local function read(key, lower)
  return read_range(key, ARGV[1], lower or ARGV[2], tonumber(ARGV[3]))
end

-- Entries held (the floor is not one); -1 when the timeline does not exist.
local function size(key)
  local t = load(key)
  if not t then return -1 end
  if t.floor_changed then save(t) end
  return t.n
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

-- The authors of the entries of ``reads`` (each {floor, member...}), once each in the order
-- found, less those ``listed`` holds (author -> true; the authors found are added to it).
local function entry_authors(reads, listed)
  local authors = {}
  for _, read_ in ipairs(reads) do
    for i = 2, #read_ do
      local author = string.match(read_[i], ':(%d+)$')
      if not listed[author] then
        listed[author] = true
        authors[#authors + 1] = author
      end
    end
  end
  return authors
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

-- A post cache value's response form (socialapp.stores.post_cache._parsed): the text before
-- its first newline; nil for nothing cached, a tombstone ('-'), a changed mark ('~...') or
-- a value written without a response form.
local function response_form(value)
  if not value or value == '-' or string.sub(value, 1, 1) == '~' then return nil end
  local newline = string.find(value, '\n', 1, true)
  if not newline then return nil end
  return string.sub(value, 1, newline - 1)
end

-- SourceRead.known_from of socialapp.domain.timeline for a read (``read_``: {floor,
-- member...} newest first, ``count`` asked, ``bound`` its own exclusive lower limit, nil for
-- none): the lowest post id at and above which it shows everything its source has. A full
-- read (``count`` entries, the last above the floor) vouches down to its last entry, else
-- the higher of the floor and the bound, + 1 (+inf when that is not finite: a feed being
-- rebuilt vouches for nothing).
local function known_from(read_, count, bound)
  local floor = tonumber(read_[1])
  if #read_ > count and #read_ > 1 then
    local last = tonumber(string.match(read_[#read_], '^(%d+)'))
    if last > (floor or math.huge) then return last end
  end
  if not floor then return math.huge end
  local low = math.max(floor, bound or -math.huge)
  if low == math.huge or low == -math.huge then return math.huge end
  return low + 1
end

-- The page a page script's merge decides alone, as socialapp.domain.timeline.merge and
-- Pages.read would make it from the same reads (``reads``, each {read, bound}, ``count``
-- asked of each; ``ids`` the merge's ids, ``values`` their post cache values in order;
-- ``boosts`` the ids of boosts among them; ``open``: no since_id): the page's ``count``
-- entries at or above where every read is known (or, when every read holds all history,
-- all of them), none a boost (the boost rule waits for what lies below a boost), each with
-- its response form cached; ``prefetch``: how many ids the merge kept at most (fewer than
-- ``count``: the page is not all read). Its ids (at most ``count``) and response forms, or nil.
local function decided_page(reads, count, prefetch, ids, values, boosts, open)
  if count < 1 or prefetch < count then return nil end
  local known = -math.huge
  for _, read_ in ipairs(reads) do
    known = math.max(known, known_from(read_[1], count, read_[2]))
  end
  local shows = math.min(#ids, count)
  if shows == count then
    if tonumber(ids[count]) < known then return nil end
  elseif known > 1 or not open then
    return nil
  end
  local forms = {}
  for i = 1, shows do
    forms[i] = not boosts[ids[i]] and response_form(values[i]) or nil
    if not forms[i] then return nil end
  end
  return {unpack(ids, 1, shows)}, forms
end

-- A home's or a list's page when decided_page decides it (``reads``, ``count``,
-- ``prefetch``, ``ids``, ``values``, ``boosts`` as it takes them; read with ARGV[2] as the
-- lower bound), as their scripts answer it: {'=', the page's post ids joined by ',', how
-- many of them ``home`` holds (the home's or the list feed's read; nil: none read),
-- ``merged`` (the outboxes merged beside it), their response forms}; nil when the page is
-- left to Python.
local function decided_answer(reads, count, prefetch, ids, values, boosts, home, merged)
  local page, forms = decided_page(reads, count, prefetch, ids, values, boosts, ARGV[2] == '-inf')
  if not page then return nil end
  local in_home, from_home = {}, 0
  for i = 2, #(home or {}) do in_home[string.match(home[i], '^(%d+)')] = true end
  for _, id in ipairs(page) do
    if in_home[id] then from_home = from_home + 1 end
  end
  local answer = {'=', table.concat(page, ','), from_home, merged}
  for _, form in ipairs(forms) do answer[#answer + 1] = form end
  return answer
end

-- Boosts among ``sources`` (reads, each {floor, member...}) the reader may not see, by the
-- hidden set ``key`` at ``now``: the authors of boosted posts it hides, and the boosters
-- whose boosts it hides (members 'r' .. booster). One ZMSCORE per 1000 of each.
local function boosts_hidden(sources, key, now)
  local originals, boosters, listed = {}, {}, {}
  for s = 1, #sources do
    for i = 2, #sources[s] do
      local member, original, booster = sources[s][i], nil, nil
      local colon = string.find(member, ':', 1, true)  -- a post's member has one
      if colon and string.find(member, ':', colon + 1, true) then
        original, booster = string.match(member, '^%d+:%d+:(%d+):(%d+)$')
      end
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
    local post, author, original, original_author = parts_of(entry)
    if not post or gone(author) then return nil end
    if original and (gone_original[original_author] or gone_booster[author]) then return nil end
    return post, original
  end
end

-- ``rule`` (as merged_ids asks it) noting the ids of the boosts it shows, and that set (post
-- id -> true): what decided_page takes as ``boosts``.
local function noting_boosts(rule)
  local boosts = {}
  return function(entry)
    local id, original = rule(entry)
    if original then boosts[id] = true end
    return id, original
  end, boosts
end
