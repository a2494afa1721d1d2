-- One server only (the outboxes span hash slots): per author of ARGV[3..] (at most 1000
-- ids, one argument each, as deliver.lua takes readers), their outbox's floor and the post
-- id of its newest entry above the floor with ARGV[2] < score < ARGV[1] (0: none). The
-- outbox keys are built here from the ids, so the client neither builds nor sends a key per
-- author. One string that parses in three splits: "missing;floors;newest", each a ',' list
-- in the authors' order; missing lists the 0-based indexes of the outboxes that do not
-- exist (their floor and newest read 0).
local missing, floors, newest = {}, {}, {}
for i = 3, #ARGV do
  local found = read_range(OUTBOX_PREFIX .. ARGV[i] .. '}', ARGV[1], ARGV[2], 1)
  local floor_text, post = '0', '0'
  if not found then
    missing[#missing + 1] = #floors
  else
    floor_text = found[1]
    local first = found[2] and string.match(found[2], '^%d+')
    if first and tonumber(first) > tonumber(floor_text) then post = first end
  end
  floors[#floors + 1], newest[#newest + 1] = floor_text, post
end
return table.concat(missing, ',') .. ';' .. table.concat(floors, ',') .. ';' ..
  table.concat(newest, ',')
