-- Remove the entry ARGV[1] (its member text) from each timeline in KEYS (one key on a
-- cluster; many on one server); how many were removed.
local removed = 0
for i = 1, #KEYS do removed = removed + remove(KEYS[i], ARGV[1]) end
return removed
