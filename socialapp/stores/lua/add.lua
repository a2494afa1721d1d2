-- Add entries to an existing set, raising its floor to at least ARGV[2]; a no-op when the
-- set does not exist. ARGV: cap, floor, score/member pairs.
return add(key)
