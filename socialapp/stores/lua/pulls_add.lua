-- Add ARGV[1] to the pulled set of every reader in KEYS whose set exists (one key on a
-- cluster; many on one server). A missing set is rebuilt whole by its reader's next read.
local added = 0
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    added = added + redis.call('SADD', KEYS[i], ARGV[1])
  end
end
return added
