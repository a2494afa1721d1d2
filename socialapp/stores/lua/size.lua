-- The entries each timeline in KEYS holds (-1: it does not exist), joined by ','.
local sizes = {}
for i = 1, #KEYS do sizes[i] = size(KEYS[i]) end
return table.concat(sizes, ',')
