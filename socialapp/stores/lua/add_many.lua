-- add.lua on every set in KEYS (one server: the keys span hash slots); how many existed.
local existed = 0
for i = 1, #KEYS do existed = existed + add(KEYS[i]) end
return existed
