-- Remove every entry whose member ends with ARGV[1] (":<author_id>"; in a tagged set
-- "#<tag>"); how many were removed.
return remove_author(key, ARGV[1])
