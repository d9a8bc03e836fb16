package finalization

// WorkClaimSQL is the locked claim of finalization Work (plan tests).
var WorkClaimSQL = qWorkClaim

// WorkBacklogSQL is the backlog read of the billing_finalization queue.
var WorkBacklogSQL = runnableWork.Backlog()
