package kinds

import (
	"github.com/oceanway/core/contracts/deliveryset"
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
)

func init() {
	// CanonicalEventEnvelope@1: validation covers the envelope and the
	// payload of its exact pair; the digest is the envelope digest
	// (jcs-sha256-v1 over the whole canonical envelope, payload included).
	register(envelope.Kind, Kind{
		Validate: func(doc []byte) error {
			_, err := envelope.DecodeEnvelope(doc)
			return err
		},
		Digest: func(doc []byte) (digest.Digest, error) {
			e, err := envelope.DecodeEnvelope(doc)
			if err != nil {
				return digest.Digest{}, err
			}
			return e.Digest()
		},
	})
	// DeliverySetDefinition: validation covers DS-1..DS-5 and DS-7's exact
	// pairs, including that the carried digest recomputes; the digest is
	// that of the candidate (everything except deliverySetDefinitionDigest).
	register(deliveryset.Kind, Kind{
		Validate: func(doc []byte) error {
			_, err := deliveryset.Decode(doc)
			return err
		},
		Digest: deliveryset.DigestDocument,
	})
}
