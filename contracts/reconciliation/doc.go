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
// # The late settlement command chain (issue 32)
//
// The second case source scope is a LateSettlementExposure@1 (BI-2,
// reconcile_before_charge): a positive difference after the reservation was
// released, never charged automatically. Its case identity is
// LateSettlementCaseIdentityReservation@1, per (settlement dimension, case
// generation). The only way to charge it is the late command, whose objects
// mirror the chain above under their own kinds, audience
// (billing_late_settlement_command) and role, so nothing of one chain
// satisfies the other:
//
//	LateSettlementCommandRequest@1        Operations via the gateway: case, exposure, no amount
//	LateSettlementCommandImpactPreview@1  the effect as literals: one post-release adjustment of the exposure
//	LateSettlementCommandApproval@1       another principal approves (never the requester)
//	LateSettlementCommandJitActivation@1  billing_late_settlement_operator for this request, ≤ 1 h
//	LateSettlementCommandCandidate@1      the gateway's frozen command
//	LateSettlementCommandDecision@1       Operations authorizes it; lateSettlementCommandOperationId
//	                                      = LateSettlementCommandOperationID(decision quadruple)
//	LateSettlementCommandGrantClaims@1    the claims of the single-use grant for that audience
//	FundingDecision@1                     Billing: account/source revision, case, exposure, policy,
//	                                      amount = the exposure's, operation, ≤ 15 min validity,
//	                                      economic identity, its own single-use jti
//	SettlementInputCurrentValidationReceipt@1 (contracts/meterfacts), purpose late_settlement_command
//	LateSettlementCommandResult@1         Billing: both consumed JTIs, funding, receipt, exposure
//	                                      open → resolved, ledger adjustment, state from → from + 1
//	BillingCaseResolutionApplied@1        Billing: the exposure's one resolution, by the command's
//	                                      result or by a later settlement transition that made it moot
//
// Every late object carries the late case (ref, generation, identity
// reservation and the settlement dimension in full) and the exposure (id,
// recording revision, quadruple); decoders recompute the dimension id, the
// case ref (LateSettlementCaseRef) and the exposure id, so an object bound
// to another generation or dimension does not decode. The operator's chain
// never carries an amount (OP-1): the amount is the exposure's, and only
// Billing's FundingDecision binds it. The result never references the
// applied fact; the applied fact names the result.
//
// # Checks
//
// Each object decodes strictly (shape, literals, rules, digest) with its
// Decode function; Seal builds one from Go and refuses what its decoder
// would refuse. CheckChain verifies the bindings between request, preview,
// approval, activation, candidate and decision; CheckGrant, CheckExchange
// and CheckApplied extend them to the grant's claims, the exchange result
// and the applied fact. CheckLateChain verifies the whole late chain in
// order (CheckLateAuthorization, CheckLateGrant, CheckFundingDecision with
// CheckLateExposure, CheckLateReceipt, CheckLateResult,
// CheckCaseResolutionApplied; CheckCaseResolutionByTransition for the
// other resolution source); two equal JTIs are ErrJTIReuse, a funding
// validity that does not contain now (or the commit) ErrFundingExpired.
// A failed binding is a *ChainMismatchError
// (ErrChainMismatch) naming it; self-approval is ErrSelfApproval, an
// activation window that does not contain now is ErrJitExpired.
//
// Standard library and contracts/** only.
package reconciliation
