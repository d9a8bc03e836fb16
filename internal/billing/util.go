package billing

import (
	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
)

func quad(ref, schemaVersion, alg, value string) strict.Quadruple {
	return strict.Quadruple{Ref: ref, SchemaVersion: schemaVersion, DigestAlgorithmVersion: digest.Algorithm(alg), Digest: value}
}
