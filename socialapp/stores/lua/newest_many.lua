-- One server only (the outboxes span hash slots): per author of ARGV[3..] (at most 1000
-- ids, one argument each, as deliver.lua takes readers), their outbox's floor and the post
-- id of its newest entry above the floor with ARGV[2] < score < ARGV[1] (0: none). The
-- outbox keys are built here from the ids, so the client neither builds nor sends a key per
-- author. One string that parses in three splits: "missing;floors;newest", each a ',' list
-- in the authors' order; missing lists the 0-based indexes of the outboxes that do not
-- exist (their floor and newest read 0).
--
-- Without an upper bound (a first page) the newest entry is the head bucket's first record,
-- in 'd' (its newest records) or, in a head written before 'd' was kept, 'h': one HMGET of
-- the floor and 'd', no index read and one post id decoded ('h', up to 2 KB, is read only
-- when 'd' is empty: a string a script makes costs some 11 instructions a byte). An outbox
-- in the old encoding (HMGET fails) or a bound goes through read_range.
local missing, floors, newest = {}, {}, {}
local bottom, bottom_open = bound_of(ARGV[2])
for i = 3, #ARGV do
  local key = OUTBOX_PREFIX .. ARGV[i] .. '}'
  local floor_text, post = '0', '0'
  local found = ARGV[1] == '+inf' and redis.pcall('HMGET', key, 'f', 'd')
  if found and not found.err then
    if not found[1] then
      missing[#missing + 1] = #floors
    else
      floor_text = found[1]
      local head = (found[2] and #found[2] > 0) and found[2] or redis.call('HGET', key, 'h')
      local first = head and #head > 0 and post_at(head, 1)
      if first and first > tonumber(floor_text)
          and (first > bottom or (first == bottom and not bottom_open)) then
        post = string.format('%d', first)
      end
    end
  else
    found = read_range(key, ARGV[1], ARGV[2], 1)
    if not found then
      missing[#missing + 1] = #floors
    else
      floor_text = found[1]
      local first = found[2] and string.match(found[2], '^%d+')
      if first and tonumber(first) > tonumber(floor_text) then post = first end
    end
  end
  floors[#floors + 1], newest[#newest + 1] = floor_text, post
end
return table.concat(missing, ',') .. ';' .. table.concat(floors, ',') .. ';' ..
  table.concat(newest, ',')
