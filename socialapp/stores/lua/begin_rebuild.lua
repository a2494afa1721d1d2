-- Replace the timeline with an empty one that is being rebuilt.
begin_rebuild(key)
return 1
