-- KEYS: rate meters (hashes: one account's, and the population's on one server).
-- ARGV[1]: the meter ('reads' or 'posts'); ARGV[2]: now; ARGV[3]: its time constant (s);
-- ARGV[4]: the hashes' TTL (s); ARGV[5]: the event's weight.
-- Counts one event (of that weight) into a counter that decays by e every time constant:
-- fields <meter> (the value) and <meter>_at (when it was last decayed). A clock behind the
-- last write (another process) counts without decaying.
local at_field = ARGV[1] .. '_at'
for _, key in ipairs(KEYS) do
  local found = redis.call('HMGET', key, ARGV[1], at_field)
  local now = tonumber(ARGV[2])
  local value, at = tonumber(found[1]) or 0, tonumber(found[2]) or now
  if now > at then
    value = value * math.exp((at - now) / tonumber(ARGV[3]))
  else
    now = at
  end
  redis.call('HSET', key, ARGV[1], string.format('%.17g', value + tonumber(ARGV[5] or 1)), at_field,
    string.format('%.17g', now))
  redis.call('EXPIRE', key, ARGV[4])
end
return 1
