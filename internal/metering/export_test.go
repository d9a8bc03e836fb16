package metering

// SettlementEvent exposes the settlement input event builder to the
// external tests that commit a hand-built version as the metering role.
var SettlementEvent = settlementEvent

// WorkClaimLaneSQL is the lane claim statement (plan tests).
var WorkClaimLaneSQL = laneStore(nil).ClaimSQL()
