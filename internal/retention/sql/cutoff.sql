-- The cutoff of an archive run: database time minus --older-than.
SELECT now() - make_interval(secs => @older_than_seconds::double precision) AS cutoff
