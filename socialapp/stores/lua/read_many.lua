-- read.lua on every set in KEYS (one server: the keys span hash slots), as one string that
-- parses fast: per set, its floor and members joined by ',' ('' when the set does not
-- exist); the sets joined by ';'.
local results = {}
for i = 1, #KEYS do
  local found = read(KEYS[i])
  results[i] = found and table.concat(found, ',') or ''
end
return table.concat(results, ';')
