-- A home page's sources, on the reader's hash slot: KEYS[1] home, KEYS[2] the authors the
-- reader pulls, KEYS[3] whom the reader follows (one hash tag). ARGV[1..3]: read bounds and
-- count (see read()); ARGV[4]: the reader; ARGV[5]: the member that marks a followee set
-- loaded. On one server (the keys span hash slots) also KEYS[4], readers' last activity,
-- and ARGV[6], ARGV[7]: now and the cutoff of activity: the reader is marked active, and the
-- outboxes are read here too.
-- 'inactive' when the reader was idle past the cutoff (fan-out skipped them: rebuild); ''
-- when the home, the pulled set or the followee set is missing (rebuild or reload). Else,
-- joined by ';': the home as "floor,member,...", the pulled authors the reader still
-- follows, the authors of home entries the reader no longer follows, then (one server) the
-- outboxes of the reader and of each pulled author in that order. The cost is the page and
-- the pulled authors, never the number of accounts followed.
-- With ARGV[8] (one server: the post cache's key prefix), the reply is {that text, the ids
-- of the page's likely posts joined by ',', their cached values...}: the newest ARGV[3]
-- entries of every source, less unfollowed authors' (a superset of what the merge keeps, as
-- the merge only drops entries below where every source is known), so a warm page takes
-- one round trip.
local here = KEYS[4] ~= nil
if here then
  local seen = redis.call('ZSCORE', KEYS[4], ARGV[4])
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[4])
  if not seen or tonumber(seen) < tonumber(ARGV[7]) then return 'inactive' end
end
local home = read(KEYS[1])
if not home or redis.call('SISMEMBER', KEYS[2], LOADED) == 0
    or redis.call('SISMEMBER', KEYS[3], ARGV[5]) == 0 then
  return ''
end
renew(KEYS[1])
renew(KEYS[2])
local pulled = {}
for _, author in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if author ~= LOADED and redis.call('SISMEMBER', KEYS[3], author) == 1 then
    pulled[#pulled + 1] = author
  end
end
local unfollowed, seen = {}, {}
for i = 2, #home do
  local author = string.match(home[i], ':(%d+)$')
  if author ~= ARGV[4] and not seen[author] then
    seen[author] = true
    if redis.call('SISMEMBER', KEYS[3], author) == 0 then
      unfollowed[#unfollowed + 1] = author
    end
  end
end
local out = {table.concat(home, ','), table.concat(pulled, ','), table.concat(unfollowed, ',')}
local found = {home}
if here then
  local function outbox_read(author)
    local read_ = read(OUTBOX_PREFIX .. author .. '}')
    out[#out + 1] = read_ and table.concat(read_, ',') or ''
    if read_ then found[#found + 1] = read_ end
  end
  outbox_read(ARGV[4])
  for _, author in ipairs(pulled) do outbox_read(author) end
end
local text = table.concat(out, ';')
if not ARGV[8] then return text end
local gone = {}
for _, author in ipairs(unfollowed) do gone[author] = true end
local ids, listed = {}, {}
for _, source in ipairs(found) do
  for i = 2, #source do
    local post, author = string.match(source[i], '^(%d+):(%d+)$')
    if post and not gone[author] and not listed[post] then
      listed[post] = true
      ids[#ids + 1] = post
    end
  end
end
table.sort(ids, function(a, b) return tonumber(a) > tonumber(b) end)
local reply, keys = {text, ''}, {}
for i = 1, math.min(#ids, tonumber(ARGV[3])) do keys[i] = ARGV[8] .. ids[i] .. '}' end
if #keys > 0 then
  reply[2] = table.concat(ids, ',', 1, #keys)
  for _, value in ipairs(redis.call('MGET', unpack(keys))) do reply[#reply + 1] = value end
end
return reply
