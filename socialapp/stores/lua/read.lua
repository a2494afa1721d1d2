-- read() of one set; ARGV[4] = '1' also renews its TTL (a reader reading their home).
local found = read(key)
if found and ARGV[4] == '1' then renew(key) end
return found
