// Package billing holds the Billing owner's wire objects of ADR-031's
// finalization: BillingFinalizationCommitted@1 (committed.go), the absorbing
// fact one successful finalization writes with its ledger postings, and —
// from the finalization pipeline — FinalizationInputManifest@1,
// FinalizationValidationBundle@1 and BillingFinalizationDecision@1
// (billing.go, describe.go, objects.go, bundle.go, decision.go).
//
// Every object is content-addressed with a quadruple (ref, schemaVersion
// "1", digestAlgorithmVersion, digest); the digest candidate is the full JSON
// form without the repository-owned ref, the object's own time field and the
// digest (CT-3). Amounts are canonical decimal text, never JSON numbers.
// Standard library and contracts/** only.
package billing
