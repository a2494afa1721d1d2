-- One server only (the outboxes span hash slots): per author of ARGV[3..] (at most 1000
-- ids, one argument each, as deliver.lua takes readers), their outbox's floor and the post
-- id of its newest entry above the floor with ARGV[2] < score < ARGV[1] (0: none). The
-- outbox keys are built here from the ids, so the client neither builds nor sends a key per
-- author. One string that parses in three splits: "missing;floors;newest", each a ',' list
-- in the authors' order; missing lists the 0-based indexes of the outboxes that do not
-- exist (their floor and newest read 0).
local missing, floors, newest = {}, {}, {}
for i = 3, #ARGV do
  local outbox = OUTBOX_PREFIX .. ARGV[i] .. '}'
  local floor, floor_text = read_floor(outbox)
  local found = '0'
  if not floor then
    missing[#missing + 1] = #floors
    floor_text = '0'
  else
    local members = redis.call('ZRANGE', outbox, ARGV[1], ARGV[2], 'BYSCORE', 'REV', 'LIMIT',
      0, 2)
    for _, member in ipairs(members) do
      if member ~= SENTINEL then
        local post_id = member:match('^%d+')
        if tonumber(post_id) > floor then found = post_id end
        break
      end
    end
  end
  floors[#floors + 1], newest[#newest + 1] = floor_text, found
end
return table.concat(missing, ',') .. ';' .. table.concat(floors, ',') .. ';' ..
  table.concat(newest, ',')
