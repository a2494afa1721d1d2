-- Add the rebuilt entries, set the floor (never below a floor already set) and trim; a
-- no-op when the timeline is gone. ARGV: cap, floor, score/member pairs.
return finish_rebuild(key)
