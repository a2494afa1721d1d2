-- KEYS[1]: authors being reconciled (hash author -> changes). ARGV[1]: the author; ARGV[2]:
-- the changes counted when their reconciliation began. Settles the author (1) unless they
-- were changed again since (0): that change's reconciliation is still to come.
local changes = redis.call('HGET', KEYS[1], ARGV[1])
if changes and changes ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
