-- Add entries to an existing timeline, raising its floor to at least ARGV[2]; a no-op when
-- it does not exist. ARGV: cap, floor, score/member pairs.
return add(key, delivery_args())
