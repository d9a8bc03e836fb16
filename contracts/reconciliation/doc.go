// Package reconciliation holds the wire objects of ADR-031's only exit from
// a Billing finalization fence in reconciliation_required (OP-1, issue 31):
// the case identity Operations reserves, and the resolution command chain
// that lets an operator ask Billing to re-evaluate the current owner state.
// The field lists are this project's definition of the objects the ADR and
// the outbox document name; every type's comment says why a field is there.
//
// # The chain
//
// The order is fixed and every object binds its predecessors by quadruple:
//
//	FinalizationReconciliationCaseIdentityReservation@1  Operations; reserved before the case is requested
//	FinalizationReconciliationResolutionCommandRequest@1 the frozen request (operator, case, evidence, justification)
//	AdminCommandImpactPreview@1                          "no direct ledger or reservation effect", as literals
//	AdminCommandApproval@1                               another principal approves (never the requester)
//	AdminCommandJitActivation@1                          the actor's operator role for this request, ≤ 1 h
//	AdminCommandCandidate@1                              the gateway's frozen command: all of the above
//	FinalizationReconciliationResolutionDecision@1       Operations authorizes the candidate
//	SignedWorkforceCommandExecutionGrant@1               Core's single-use JWS (GrantClaims), obtained
//	  via CommandGrantExchangeResult@1                   through an idempotent exchange
//	FinalizationReconciliationResolutionApplied@1        Billing's fact, with the applied event
//
// Request, Candidate and Decision never contain a successor (grant, applied
// fact, resolution operation): resolutionOperationId is derived from the
// decision's full quadruple (ResolutionOperationID), and the grant and the
// fact then bind everything before them, so the digest chain is acyclic.
//
// # What a command can do
//
// Exactly one thing: reevaluate_current_owner_state. No object has an
// amount, a replacement snapshot, an "ignore conflict" flag or a free map,
// and the strict decoders refuse any field they do not list, so none can be
// smuggled in. The re-evaluation runs the owners' existing strict reads; if
// the owners still conflict, Billing opens the next case generation.
//
// investigationEvidenceReferences is a non-empty, sorted, de-duplicated set
// of content-addressed references (≤ 32). It is Operations' basis for
// authorizing, not proof that anything was repaired: Billing only checks it
// is the same set on Request, Candidate, Decision, Grant and Fact.
//
// # Checks
//
// Each object decodes strictly (shape, literals, rules, digest) with its
// Decode function; Seal builds one from Go and refuses what its decoder
// would refuse. CheckChain verifies the bindings between request, preview,
// approval, activation, candidate and decision; CheckGrant, CheckExchange
// and CheckApplied extend them to the grant's claims, the exchange result
// and the applied fact. A failed binding is a *ChainMismatchError
// (ErrChainMismatch) naming it; self-approval is ErrSelfApproval, an
// activation window that does not contain now is ErrJitExpired.
//
// Standard library and contracts/** only.
package reconciliation
