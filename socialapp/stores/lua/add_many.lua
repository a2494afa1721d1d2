-- add.lua on every set in KEYS (one server: the keys span hash slots); how many existed. A
-- delivery (a post to the feeds of the lists holding its author) parses its entry once.
local delivery, existed = delivery_args(), 0
for i = 1, #KEYS do existed = existed + add(KEYS[i], delivery) end
return existed
