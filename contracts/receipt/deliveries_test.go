package receipt_test

// moreDeliveries returns the metering and billing scenarios.
func moreDeliveries() []*delivery { return nil }
