-- Database time (leases, cutoffs and run times use database time, never the process clock).
SELECT clock_timestamp() AS now
