package billing

import (
	"fmt"
	"time"

	"github.com/oceanway/core/contracts/strict"
)

// ExecutionEntry is the one Execution closure receipt of a bundle.
type ExecutionEntry struct {
	Finalization strict.Quadruple
	AttemptSet   strict.Quadruple
	AttemptCount int64
	Receipt      strict.Quadruple // RunExecutionFinalizationReceipt@1
}

// MeteringEntry is the Metering validateSettlementInputCurrent receipt
// (purpose finalization) of one manifest dimension.
type MeteringEntry struct {
	RunStepID          string
	ExecutionAttemptID string
	ChargeDimensionKey string
	SettlementInput    strict.Quadruple
	SettlementStateVer int64
	Receipt            strict.Quadruple
}

// Key is the entry's sort key (the manifest's dimension order).
func (e MeteringEntry) Key() [3]string {
	return [3]string{e.RunStepID, e.ExecutionAttemptID, e.ChargeDimensionKey}
}

// GatewayEntry records the Gateway's found answer for one distinct
// attempt-bound availability snapshot of the manifest.
type GatewayEntry struct {
	ExecutionAttemptID string
	Availability
}

// Key is the entry's sort key.
func (e GatewayEntry) Key() [3]string {
	return [3]string{e.ExecutionAttemptID, e.GatewayDeploymentID, e.ProviderEvidenceKind + "\x00" + e.EvidenceDimensionKey + "\x00" + e.Snapshot.Ref}
}

// FinalizationValidationBundle is FinalizationValidationBundle@1 — our
// definition of ADR-031's closed bundle of the three receipt sets. Every
// entry echoes its purpose, the finalization operation and the input
// manifest quadruple (they must equal the bundle's) and the identity of the
// object it validated; sets are arrays with counts, never maps or booleans.
//
//	finalizationValidationBundleRef / SchemaVersion("1") / DigestAlgorithmVersion / Digest
//	billingReservationId, runId, billingFinalizationOperationId, finalizationInputManifest quadruple
//	executionReceipt                 exactly one
//	meteringReceiptCount, meteringReceipts[]   one per manifest dimension, manifest order
//	gatewayReceiptCount, gatewayReceipts[]     one per distinct availability, sorted
//	assembledAt                      excluded from the digest candidate
type FinalizationValidationBundle struct {
	Bundle                  strict.Quadruple
	BillingReservationID    string
	RunID                   string
	FinalizationOperationID string
	InputManifest           strict.Quadruple
	Execution               ExecutionEntry
	Metering                []MeteringEntry
	Gateway                 []GatewayEntry
	AssembledAt             time.Time
}

func (*FinalizationValidationBundle) Kind() string              { return KindFinalizationValidationBundle }
func (b *FinalizationValidationBundle) Quad() *strict.Quadruple { return &b.Bundle }

func (b *FinalizationValidationBundle) echo(purpose string) map[string]any {
	m := map[string]any{"purpose": purpose, "billingFinalizationOperationId": b.FinalizationOperationID}
	b.InputManifest.Put(m, PrefixInputManifest)
	return m
}

// ToJSON returns the full JSON form.
func (b *FinalizationValidationBundle) ToJSON() map[string]any {
	ex := b.echo(PurposeBillingFinalization)
	b.Execution.Finalization.Put(ex, PrefixRunFinalization)
	b.Execution.AttemptSet.Put(ex, PrefixAttemptSet)
	ex["attemptCount"] = b.Execution.AttemptCount
	b.Execution.Receipt.Put(ex, PrefixExecutionReceipt)
	metering := make([]any, 0, len(b.Metering))
	for _, e := range b.Metering {
		m := b.echo(PurposeMeteringFinalization)
		m["runStepId"], m["executionAttemptId"], m["chargeDimensionKey"] = e.RunStepID, e.ExecutionAttemptID, e.ChargeDimensionKey
		m["settlementInputStateVersion"] = e.SettlementStateVer
		e.SettlementInput.Put(m, PrefixSettlementInput)
		e.Receipt.Put(m, PrefixSettlementReceipt)
		metering = append(metering, m)
	}
	gw := make([]any, 0, len(b.Gateway))
	for _, e := range b.Gateway {
		m := b.echo(PurposeBillingFinalization)
		m["readContractVersion"] = ReadAvailabilitySnapshotV1
		m["executionAttemptId"] = e.ExecutionAttemptID
		e.Availability.put(m)
		gw = append(gw, m)
	}
	out := map[string]any{
		"billingReservationId": b.BillingReservationID, "runId": b.RunID, "billingFinalizationOperationId": b.FinalizationOperationID,
		"executionReceipt": ex, "meteringReceiptCount": int64(len(b.Metering)), "meteringReceipts": metering,
		"gatewayReceiptCount": int64(len(b.Gateway)), "gatewayReceipts": gw, "assembledAt": strict.FormatTimestamp(b.AssembledAt),
	}
	b.InputManifest.Put(out, PrefixInputManifest)
	b.Bundle.Put(out, PrefixValidationBundle)
	return out
}

// DecodeFinalizationValidationBundle strictly decodes a bundle, checks its
// rules and verifies its digest.
func DecodeFinalizationValidationBundle(doc []byte) (*FinalizationValidationBundle, error) {
	m, err := decodeMap(KindFinalizationValidationBundle, doc)
	if err != nil {
		return nil, err
	}
	ex := obj(m, "executionReceipt")
	b := &FinalizationValidationBundle{
		Bundle: quad(m, PrefixValidationBundle), BillingReservationID: str(m, "billingReservationId"), RunID: str(m, "runId"),
		FinalizationOperationID: str(m, "billingFinalizationOperationId"), InputManifest: quad(m, PrefixInputManifest),
		Execution: ExecutionEntry{Finalization: quad(ex, PrefixRunFinalization), AttemptSet: quad(ex, PrefixAttemptSet),
			AttemptCount: i64(ex, "attemptCount"), Receipt: quad(ex, PrefixExecutionReceipt)},
		Metering: []MeteringEntry{}, Gateway: []GatewayEntry{},
	}
	for _, e := range list(m, "meteringReceipts") {
		b.Metering = append(b.Metering, readMeteringEntry(e))
	}
	for _, e := range list(m, "gatewayReceipts") {
		b.Gateway = append(b.Gateway, GatewayEntry{ExecutionAttemptID: str(e, "executionAttemptId"), Availability: readAvailability(e)})
	}
	b.AssembledAt, _ = strict.ParseTimestamp(str(m, "assembledAt"))
	return b, nil
}

func readMeteringEntry(e map[string]any) MeteringEntry {
	return MeteringEntry{RunStepID: str(e, "runStepId"), ExecutionAttemptID: str(e, "executionAttemptId"),
		ChargeDimensionKey: str(e, "chargeDimensionKey"), SettlementInput: quad(e, PrefixSettlementInput),
		SettlementStateVer: i64(e, "settlementInputStateVersion"), Receipt: quad(e, PrefixSettlementReceipt)}
}

// bundleRules: every entry echoes the bundle's operation and input
// manifest; each set is counted and strictly sorted (no duplicate).
func bundleRules(m map[string]any) error {
	op, manifest := str(m, "billingFinalizationOperationId"), quad(m, PrefixInputManifest)
	echoes := func(where string, e map[string]any) error {
		if str(e, "billingFinalizationOperationId") != op || quad(e, PrefixInputManifest) != manifest {
			return fmt.Errorf("%w: %s echoes another operation or input manifest", ErrBundleRule, where)
		}
		return nil
	}
	if err := echoes("executionReceipt", obj(m, "executionReceipt")); err != nil {
		return err
	}
	for _, set := range []struct {
		name, count string
		key         func(map[string]any) [3]string
	}{
		{"meteringReceipts", "meteringReceiptCount", func(e map[string]any) [3]string { return readMeteringEntry(e).Key() }},
		{"gatewayReceipts", "gatewayReceiptCount", func(e map[string]any) [3]string {
			return GatewayEntry{ExecutionAttemptID: str(e, "executionAttemptId"), Availability: readAvailability(e)}.Key()
		}},
	} {
		entries := list(m, set.name)
		if i64(m, set.count) != int64(len(entries)) {
			return fmt.Errorf("%w: %s %d, %d entries", ErrBundleRule, set.count, i64(m, set.count), len(entries))
		}
		for i, e := range entries {
			if err := echoes(fmt.Sprintf("%s[%d]", set.name, i), e); err != nil {
				return err
			}
			if i > 0 && !less(set.key(entries[i-1]), set.key(e)) {
				return fmt.Errorf("%w: %s[%d] is not after %s[%d]", ErrBundleRule, set.name, i, set.name, i-1)
			}
		}
	}
	return nil
}

// SortGatewayEntries sorts gateway entries into bundle order.
func SortGatewayEntries(es []GatewayEntry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && less(es[j].Key(), es[j-1].Key()); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}
