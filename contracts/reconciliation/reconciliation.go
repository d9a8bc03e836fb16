package reconciliation

import (
	"errors"
	"time"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/schema"
	"github.com/oceanway/core/contracts/sealed"
	"github.com/oceanway/core/contracts/strict"
)

// SchemaVersion1 is the schema version of every object of this package.
const SchemaVersion1 = "1"

// Contract names (spec names). The Grant itself is a compact JWS
// (KindGrant); this package describes its claims (KindGrantClaims).
const (
	KindCaseIdentityReservation = "FinalizationReconciliationCaseIdentityReservation@1"
	KindCommandRequest          = "FinalizationReconciliationResolutionCommandRequest@1"
	KindImpactPreview           = "AdminCommandImpactPreview@1"
	KindApproval                = "AdminCommandApproval@1"
	KindJitActivation           = "AdminCommandJitActivation@1"
	KindCandidate               = "AdminCommandCandidate@1"
	KindDecision                = "FinalizationReconciliationResolutionDecision@1"
	KindGrant                   = "SignedWorkforceCommandExecutionGrant@1"
	KindGrantClaims             = "SignedWorkforceCommandExecutionGrantClaims@1"
	KindGrantExchangeResult     = "CommandGrantExchangeResult@1"
	KindApplied                 = "FinalizationReconciliationResolutionApplied@1"
)

// Prefixes of the quadruples: an object's own and every reference to it use
// the same prefix, so a reference reads as the object it names.
const (
	PrefixCaseIdentity   = "finalizationCaseIdentityReservation"
	PrefixCommandRequest = "finalizationReconciliationResolutionCommandRequest"
	PrefixImpactPreview  = "adminCommandImpactPreview"
	PrefixApproval       = "adminCommandApproval"
	PrefixJitActivation  = "adminCommandJitActivation"
	PrefixCandidate      = "adminCommandCandidate"
	PrefixDecision       = "finalizationReconciliationResolutionDecision"
	PrefixExchangeResult = "commandGrantExchangeResult"
	PrefixApplied        = "finalizationReconciliationResolutionApplied"
)

// The fixed literals of the chain. There is exactly one action and it moves
// no money: the command re-runs the owners' strict reads, nothing else.
const (
	SourceKindBillingFinalization     = "billing_finalization"
	ActionReevaluateCurrentOwnerState = "reevaluate_current_owner_state"
	AudienceResolutionCommand         = "billing_finalization_reconciliation_resolution_command"
	RoleReconciliationOperator        = "billing_reconciliation_operator"
	EffectNone                        = "none"
	ImpactStatement                   = "No direct ledger or reservation effect: the command only re-evaluates the current owner state."
	GrantSchemaVersion1               = "1"
	// ResolutionRevision1 is the one resolution a case generation allows
	// (expectedResolutionRevision = resolutionRevision = 1); a re-evaluation
	// that still conflicts opens the next generation instead.
	ResolutionRevision1 = 1
)

// Bounds of the chain's windows and sets.
const (
	// MaxJitWindow bounds an activation: a standing privilege is what JIT
	// exists to avoid.
	MaxJitWindow = time.Hour
	// MaxGrantLifetime bounds a grant: the gateway presents it right after
	// the exchange, so a leaked grant is useless soon after.
	MaxGrantLifetime = 5 * time.Minute
	// MaxEvidenceReferences bounds investigationEvidenceReferences.
	MaxEvidenceReferences = 32
)

// Errors of the refinement rules a shape cannot express.
var (
	// ErrEvidenceSet: investigationEvidenceReferences not sorted by
	// (evidenceKind, ref, digest) or holding a duplicate.
	ErrEvidenceSet = errors.New("reconciliation: evidence references are not a sorted set")
	// ErrGenerationRule: generation 1 with a predecessor, a later generation
	// without one, or a predecessor that is not the direct one.
	ErrGenerationRule = errors.New("reconciliation: case generation and predecessor disagree")
	// ErrDerivedID: a derived identifier (case ref, case request operation,
	// resolution operation, grant exchange operation) does not recompute.
	ErrDerivedID = errors.New("reconciliation: derived identifier does not recompute")
	// ErrSelfApproval: the approver is the requester (or the actor).
	ErrSelfApproval = errors.New("reconciliation: a command may not be approved by its requester")
	// ErrJitWindow: an activation window that is empty or longer than MaxJitWindow.
	ErrJitWindow = errors.New("reconciliation: JIT activation window is empty or too long")
	// ErrGrantLifetime: grant claims with iat > nbf, nbf >= exp or a lifetime
	// beyond MaxGrantLifetime.
	ErrGrantLifetime = errors.New("reconciliation: grant lifetime is out of order or too long")
	// ErrInvalidObject marks a Go-built object that does not satisfy its
	// description or rules (Seal refuses it).
	ErrInvalidObject = errors.New("reconciliation: invalid object")
)

// Sealed is a content-addressed object of this package.
type Sealed = sealed.Object

var kindsInOrder = []string{
	KindCaseIdentityReservation, KindCommandRequest, KindImpactPreview, KindApproval, KindJitActivation,
	KindCandidate, KindDecision, KindGrantExchangeResult, KindApplied, KindLateCaseIdentityReservation,
}

// lateKindsInOrder is the late settlement command chain (issue 32), after
// kindsInOrder; its grant claims follow KindLateDecision in Contracts.
var lateKindsInOrder = []string{
	KindLateCommandRequest, KindLateImpactPreview, KindLateApproval, KindLateJitActivation, KindLateCandidate,
	KindLateDecision, KindFundingDecision, KindLateResult, KindCaseResolutionApplied,
}

// registry binds each kind to its description, self-addressing and rules
// (contracts/sealed). Time fields a decision depends on (the JIT window,
// the grant's expiry) stay in the digest; only bookkeeping times are left out.
var registry = sealed.Registry{Invalid: ErrInvalidObject, Specs: func() map[string]sealed.Spec {
	self := func(prefix, timeField string) strict.SelfAddressed {
		return strict.SelfAddressed{Prefix: prefix, TimeFields: []string{timeField}}
	}
	return map[string]sealed.Spec{
		KindCaseIdentityReservation: {Def: CaseIdentityReservationDef, Self: self(PrefixCaseIdentity, "reservedAt"), Rules: identityRules},
		KindCommandRequest:          {Def: CommandRequestDef, Self: self(PrefixCommandRequest, "requestedAt"), Rules: evidenceRules},
		KindImpactPreview:           {Def: ImpactPreviewDef, Self: self(PrefixImpactPreview, "previewedAt")},
		KindApproval:                {Def: ApprovalDef, Self: self(PrefixApproval, "approvedAt"), Rules: approvalRules},
		KindJitActivation:           {Def: JitActivationDef, Self: self(PrefixJitActivation, "activatedAt"), Rules: jitRules},
		KindCandidate:               {Def: CandidateDef, Self: self(PrefixCandidate, "createdAt"), Rules: evidenceRules},
		KindDecision:                {Def: DecisionDef, Self: self(PrefixDecision, "decidedAt"), Rules: evidenceRules},
		KindGrantExchangeResult:     {Def: GrantExchangeResultDef, Self: self(PrefixExchangeResult, "exchangedAt"), Rules: exchangeRules},
		KindApplied:                 {Def: AppliedDef, Self: self(PrefixApplied, "appliedAt"), Rules: appliedRules},
		KindLateCaseIdentityReservation: {Def: LateCaseIdentityReservationDef, Self: self(PrefixLateCaseIdentity, "reservedAt"),
			Rules: lateIdentityRules},

		KindLateCommandRequest:    {Def: LateCommandRequestDef, Self: self(PrefixLateCommandRequest, "requestedAt"), Rules: lateEvidenceRules},
		KindLateImpactPreview:     {Def: LateImpactPreviewDef, Self: self(PrefixLateImpactPreview, "previewedAt")},
		KindLateApproval:          {Def: LateApprovalDef, Self: self(PrefixLateApproval, "approvedAt"), Rules: approvalRules},
		KindLateJitActivation:     {Def: LateJitActivationDef, Self: self(PrefixLateJitActivation, "activatedAt"), Rules: jitRules},
		KindLateCandidate:         {Def: LateCandidateDef, Self: self(PrefixLateCandidate, "createdAt"), Rules: lateEvidenceRules},
		KindLateDecision:          {Def: LateDecisionDef, Self: self(PrefixLateDecision, "decidedAt"), Rules: lateEvidenceRules},
		KindFundingDecision:       {Def: FundingDecisionDef, Self: self(PrefixFundingDecision, "decidedAt"), Rules: fundingRules},
		KindLateResult:            {Def: LateResultDef, Self: self(PrefixLateResult, "committedAt"), Rules: lateResultRules},
		KindCaseResolutionApplied: {Def: CaseResolutionAppliedDef, Self: self(PrefixCaseResolutionApplied, "appliedAt"), Rules: caseResolutionRules},
	}
}}

// Seal sets x's schema version 1, jcs-sha256-v1 and the digest of its
// candidate, checks the result against the description and its rules and
// returns the canonical body. The ref must already be set.
func Seal(x Sealed) ([]byte, error) { return registry.Seal(x) }

// SealAddressed seals x with a ref derived from its own content
// (refPrefix + the first 32 hex digits of its digest): a retry after a lost
// response builds the same object and gets the same ref.
func SealAddressed(x Sealed, refPrefix string) ([]byte, error) {
	x.Quad().Ref = refPrefix + "pending"
	if _, err := Seal(x); err != nil {
		return nil, err
	}
	x.Quad().Ref = refPrefix + x.Quad().Digest[:32]
	return Seal(x)
}

// DigestOf returns the digest of x's candidate (x need not be sealed).
func DigestOf(x Sealed) (digest.Digest, error) { return registry.DigestOf(x, digest.JCSSHA256V1) }

func decodeMap(kind string, doc []byte) (map[string]any, error) { return registry.Decode(kind, doc) }

// Contract is one kind of this package as contracts/kinds and
// contracts/schemagen list it. Digest is nil for the grant claims, which
// have no quadruple of their own (the grant is named by its JWS's sha256).
type Contract struct {
	Name     string
	Validate func(doc []byte) error
	Digest   func(doc []byte) (digest.Digest, error)
	Def      *schema.Def
}

// Contracts lists the kinds of this package in chain order.
func Contracts() []Contract {
	var out []Contract
	for _, kind := range append(append([]string(nil), kindsInOrder...), lateKindsInOrder...) {
		s, _ := registry.Spec(kind)
		out = append(out, Contract{
			Name: kind,
			Def:  s.Def,
			Validate: func(doc []byte) error {
				_, err := decodeMap(kind, doc)
				return err
			},
			Digest: func(doc []byte) (digest.Digest, error) { return registry.DigestDoc(kind, doc, "") },
		})
		if kind == KindDecision { // the grant follows the decision in the chain
			out = append(out, Contract{Name: KindGrantClaims, Def: GrantClaimsDef, Validate: func(doc []byte) error {
				_, err := DecodeGrantClaims(doc)
				return err
			}})
		}
		if kind == KindLateDecision {
			out = append(out, Contract{Name: KindLateGrantClaims, Def: LateGrantClaimsDef, Validate: func(doc []byte) error {
				_, err := DecodeLateGrantClaims(doc)
				return err
			}})
		}
	}
	return out
}

// --- map binding helpers (the map is a description-checked tree) ---------

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func i64(m map[string]any, k string) int64 { n, _ := m[k].(int64); return n }

func obj(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

func list(m map[string]any, k string) []map[string]any {
	raw, _ := m[k].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		x, _ := r.(map[string]any)
		out = append(out, x)
	}
	return out
}

func quad(m map[string]any, prefix string) strict.Quadruple {
	f := strict.Fields(prefix)
	return strict.Quadruple{Ref: str(m, f[0]), SchemaVersion: str(m, f[1]), DigestAlgorithmVersion: digest.Algorithm(str(m, f[2])), Digest: str(m, f[3])}
}

func tm(m map[string]any, k string) time.Time {
	t, _ := strict.ParseTimestamp(str(m, k))
	return t
}

// --- description helpers ---------------------------------------------------

var uuid = schema.UUID{}

func ids(names ...string) []schema.Field {
	var out []schema.Field
	for _, n := range names {
		out = append(out, schema.F(n, uuid, "")...)
	}
	return out
}

// selfQuad is an object's own quadruple: schema version 1 only.
func selfQuad(prefix, doc string) []schema.Field {
	q := schema.Quad(prefix, doc)
	q[1].Type = schema.SchemaVersion{Known: []string{SchemaVersion1}}
	return q
}

// WorkloadText is a workload principal name, owner.component
// (e.g. "admin.command-gateway").
var WorkloadText = schema.Text{MaxLength: 128, Pattern: `^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$`}

// SHA256Text is a lowercase hex SHA-256 of bytes that are not JSON (the compact JWS).
var SHA256Text = schema.Text{MaxLength: 64, Pattern: schema.DigestPattern}

func actionField() []schema.Field {
	return schema.F("action", schema.Literal{Value: ActionReevaluateCurrentOwnerState}, "the only action: re-run the owners' strict reads")
}

func audienceField() []schema.Field {
	return schema.F("commandAudience", schema.Literal{Value: AudienceResolutionCommand}, "")
}

func principal(name, doc string) []schema.Field { return schema.F(name, schema.PrincipalText, doc) }
