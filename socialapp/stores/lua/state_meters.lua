-- KEYS: rate meters (hashes; they span hash slots: one server only). ARGV[1]: the meter.
-- Each meter's value and when it was last decayed, "value:at" ('' for none), joined by
-- ',': one string parses much faster than a reply of many.
local out = {}
local at_field = ARGV[1] .. '_at'
for i, key in ipairs(KEYS) do
  local found = redis.call('HMGET', key, ARGV[1], at_field)
  out[i] = found[1] and (found[1] .. ':' .. found[2]) or ''
end
return table.concat(out, ',')
