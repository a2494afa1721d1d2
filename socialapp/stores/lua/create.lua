-- Create the timeline if it does not exist. ARGV: cap, floor, score/member pairs.
return create(key)
