package kinds

import "github.com/oceanway/core/contracts/receipt"

func init() {
	// ActiveConsumerAck@1 and the receipts and facts of contracts/receipt,
	// by their spec names. Validate checks shape, every refinement rule and,
	// for content-addressed objects, the embedded digest; Digest prints the
	// digest of the candidate (the ack is not content-addressed: no Digest).
	for _, c := range receipt.Contracts() {
		register(c.Name, Kind{Validate: c.Validate, Digest: c.Digest})
	}
}
