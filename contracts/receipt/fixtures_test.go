package receipt_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/contracts/strict"
)

// Deterministic fixture values: every id, digest and time derives from a label.

func hexOf(label string) string {
	sum := sha256.Sum256([]byte(label))
	return hex.EncodeToString(sum[:])
}

func dig(label string) digest.Digest {
	return digest.Digest{Algorithm: digest.JCSSHA256V1, Value: hexOf(label)}
}

func uuidOf(label string) string {
	h := hexOf("uuid:" + label)
	return fmt.Sprintf("%s-%s-7%s-8%s-%s", h[0:8], h[8:12], h[13:16], h[17:20], h[20:32])
}

func quad(label string) strict.Quadruple {
	return strict.Quadruple{Ref: label, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: hexOf(label)}
}

func at(minute int) time.Time {
	return time.Date(2026, 3, 1, 12, minute, 0, 123456000, time.UTC)
}

var opsTarget = route.Required("operations_run_view", 3)

// memberFor returns the frozen member of dest for an event pair.
func memberFor(dest route.Destination, eventType, schema string) route.Member {
	b, err := route.BindingOf(dest)
	if err != nil {
		panic(err)
	}
	target := route.NotApplicable
	if b.RequiresProjection {
		target = opsTarget
	}
	return route.Member{
		EventType: eventType, EventSchemaVersion: schema,
		Destination: dest, ConsumerName: b.ConsumerName,
		ExpectedReceiptType: b.ReceiptType, ExpectedReceiptSchemaVersion: b.ReceiptSchemaVersion,
		ProjectionTarget: target, Mandatory: true,
	}
}

// opsEvent is a run.created@2.0 event delivered to core_operations.
func opsEvent(label string) receipt.EventFacts {
	return receipt.EventFacts{
		EventID:            uuidOf(label),
		EventType:          "run.created@2.0",
		EventSchemaVersion: "2.0",
		EnvelopeDigest:     dig("envelope:" + label),
		Identity: map[string]string{
			"tenantKind": "organization", "tenantId": "org-1", "workspaceId": "ws-1",
			"runId": "run-" + label, "billingReservationId": "res-" + label,
		},
	}
}

func opsReceipt(label string) *receipt.OperationsProjectionAppliedReceipt {
	r, err := receipt.NewOperationsProjectionAppliedReceipt("opr-"+label, opsTarget, opsEvent(label), at(1))
	if err != nil {
		panic(err)
	}
	return r
}

func mustJSON(r interface{ ToJSON() map[string]any }) []byte {
	return mustMarshal(r.ToJSON())
}

func mustMarshal(m map[string]any) []byte {
	b, err := jcs.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// clone deep-copies a JSON tree so a mutation never leaks into a fixture.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	default:
		return v
	}
}

// path walks dotted object keys ("lane.coordinationState") to a nested object.
func path(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		m = m[k].(map[string]any)
	}
	return m
}
