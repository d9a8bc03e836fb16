package catchup

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/big"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	billingc "github.com/oceanway/core/contracts/billing"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/reconciliation"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/workload"
)

// LateGrantVerifier verifies a SignedWorkforceCommandExecutionGrant@1 of
// audience billing_late_settlement_command: its signature by Core's grant
// key, its issuer and the strict shape of its claims
// (reconciliation.DecodeLateGrantClaims). The time window and the jti are
// the late command's to check.
type LateGrantVerifier interface {
	VerifyLateGrant(compactJWS string) (*reconciliation.LateGrantClaims, error)
}

// ErrLateGrant: a late settlement command grant that does not verify
// (malformed, unknown key, bad signature, another issuer, claims that are
// not strictly a late grant's), is not valid now, or does not bind exactly
// the command's candidate and decision.
var ErrLateGrant = errors.New("billing: late settlement command grant refused")

// JWSLateGrantVerifier verifies late grants of one issuer against Core's
// grant public keys (EdDSA over Ed25519, kid = RFC 7638 thumbprint), as
// grants.Verifier does for the finalization resolution audience.
type JWSLateGrantVerifier struct {
	issuer string
	keys   map[string]ed25519.PublicKey
}

// NewLateGrantVerifier trusts keys for late grants of issuer.
func NewLateGrantVerifier(issuer string, keys ...ed25519.PublicKey) (*JWSLateGrantVerifier, error) {
	if issuer == "" || len(keys) == 0 {
		return nil, errors.New("billing: the late grant verifier needs an issuer and a key")
	}
	v := &JWSLateGrantVerifier{issuer: issuer, keys: map[string]ed25519.PublicKey{}}
	for _, k := range keys {
		kid, err := workload.KeyID(k)
		if err != nil {
			return nil, err
		}
		v.keys[kid] = k
	}
	return v, nil
}

// VerifyLateGrant implements LateGrantVerifier.
func (v *JWSLateGrantVerifier) VerifyLateGrant(compact string) (*reconciliation.LateGrantClaims, error) {
	jws, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: malformed: %v", ErrLateGrant, err)
	}
	key, ok := v.keys[jws.Signatures[0].Header.KeyID]
	if !ok {
		return nil, fmt.Errorf("%w: unknown key id", ErrLateGrant)
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrLateGrant, err)
	}
	c, err := reconciliation.DecodeLateGrantClaims(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLateGrant, err)
	}
	if c.Issuer != v.issuer {
		return nil, fmt.Errorf("%w: issuer %q, want %q", ErrLateGrant, c.Issuer, v.issuer)
	}
	return c, nil
}

// FundingPolicy is Billing's late settlement funding policy. Revision 1
// funds exactly the exposure's amount from the dimension's billing account
// as a post-release adjustment; MaxAmount (optional, exact decimal) refuses
// larger exposures.
type FundingPolicy struct {
	// Revision is the funding policy revision decisions bind (default 1).
	Revision int64
	// Validity is how long a FundingDecision@1 stays valid (default 10
	// minutes, at most reconciliation.MaxFundingDecisionValidity).
	Validity time.Duration
	// MaxAmount, when set, is the largest exposure amount funded.
	MaxAmount string
}

// LateCommands is Billing's side of the late settlement command (issue 32
// part 2): FundingDecision@1 and the one ledger transaction that applies a
// granted, funded command. It implements casegateway.LateBilling.
type LateCommands struct {
	// Pool is the core database as the billing role.
	Pool db.Beginner
	// Grants verifies Core's late settlement command grants.
	Grants LateGrantVerifier
	// Metering answers the late_settlement_command current validation.
	Metering Metering
	// Now is the clock (default time.Now, UTC).
	Now    func() time.Time
	Policy FundingPolicy
}

// DerivationLatePostingGroup names the ledger posting group of a late
// settlement command operation.
const DerivationLatePostingGroup = "billing_late_settlement_posting_group@1"

// LatePostingGroupID derives the posting group id of the late settlement
// command with this operation id (one group per command result).
func LatePostingGroupID(commandOperationID string) string {
	return envelope.DeriveID(DerivationLatePostingGroup, map[string]any{"lateSettlementCommandOperationId": commandOperationID})
}

func (l *LateCommands) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

func (l *LateCommands) policy() (FundingPolicy, error) {
	p := l.Policy
	if p.Revision == 0 {
		p.Revision = 1
	}
	if p.Validity == 0 {
		p.Validity = 10 * time.Minute
	}
	if p.Revision < 1 || p.Validity <= 0 || p.Validity > reconciliation.MaxFundingDecisionValidity {
		return p, fmt.Errorf("%w: funding policy revision %d, validity %s", ErrInvalid, p.Revision, p.Validity)
	}
	return p, nil
}

// storedExposure is one exposure row with its resolution state.
type storedExposure struct {
	Exposure   *billingc.LateSettlementExposure
	Generation int64
	Resolved   bool
	Latest     bool
}

// lockedExposure reads the exposure under the dimension lock the caller
// holds: decoded, its case generation, whether it has a resolution and
// whether it is still the dimension's latest exposure.
func lockedExposure(ctx context.Context, tx pgx.Tx, exposureID string) (*storedExposure, error) {
	var body string
	var gen *int64
	var resolved, latest bool
	err := tx.QueryRow(ctx, `SELECT e.exposure_body, e.case_generation,
		    EXISTS (SELECT 1 FROM billing.late_settlement_exposure_resolutions x WHERE x.late_settlement_exposure_id = e.late_settlement_exposure_id),
		    NOT EXISTS (SELECT 1 FROM billing.late_settlement_exposures n
		                 WHERE n.settlement_dimension_id = e.settlement_dimension_id AND n.settlement_state_revision > e.settlement_state_revision)
		  FROM billing.late_settlement_exposures e WHERE e.late_settlement_exposure_id = $1`, exposureID).Scan(&body, &gen, &resolved, &latest)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: exposure %s is unknown", ErrExposureNotOpen, exposureID)
	}
	if err != nil {
		return nil, fmt.Errorf("read late settlement exposure %s: %w", exposureID, err)
	}
	e, err := billingc.DecodeLateSettlementExposure([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("%w: stored exposure %s: %w", ErrConflict, exposureID, err)
	}
	s := &storedExposure{Exposure: e, Resolved: resolved, Latest: latest}
	if gen != nil {
		s.Generation = *gen
	}
	return s, nil
}

// openExposureOf checks, under the lock, that the exposure lc and ref name
// is the dimension's latest open exposure in that case generation, and
// returns it with the generation's state.
func openExposureOf(ctx context.Context, tx pgx.Tx, lc reconciliation.LateCase, ref reconciliation.LateExposureRef) (*storedExposure, string, error) {
	s, err := lockedExposure(ctx, tx, ref.LateSettlementExposureID)
	if err != nil {
		return nil, "", err
	}
	e := s.Exposure
	if e.Case == nil || e.Case.CaseGeneration != lc.CaseGeneration || e.Case.ReconciliationCaseRef != lc.ReconciliationCaseRef ||
		e.Case.Identity != lc.Identity {
		return nil, "", fmt.Errorf("%w: exposure %s is not in case generation %d", ErrLateCaseGeneration, ref.LateSettlementExposureID, lc.CaseGeneration)
	}
	if err := reconciliation.CheckLateExposure(e, lc, ref); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrExposureNotOpen, err)
	}
	if s.Resolved || !s.Latest {
		return nil, "", fmt.Errorf("%w: exposure %s is resolved or superseded", ErrExposureNotOpen, ref.LateSettlementExposureID)
	}
	var state string
	if err := tx.QueryRow(ctx, `SELECT state FROM billing.late_settlement_cases
		WHERE settlement_dimension_id = $1 AND case_generation = $2 FOR UPDATE`, e.Dimension.SettlementDimensionID(), lc.CaseGeneration).Scan(&state); err != nil {
		return nil, "", fmt.Errorf("read late settlement case %d: %w", lc.CaseGeneration, err)
	}
	return s, state, nil
}

// storedFunding reads the funding decision stored for a command operation
// (nil when none).
func storedFunding(ctx context.Context, q db.Executor, op string) (*reconciliation.FundingDecision, error) {
	var body string
	err := q.QueryRow(ctx, `SELECT funding_decision_body FROM billing.funding_decisions WHERE command_operation_id = $1`, op).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read funding decision: %w", err)
	}
	fd, err := reconciliation.DecodeFundingDecision([]byte(body))
	if err != nil {
		return nil, fmt.Errorf("%w: stored funding decision of %s: %w", ErrConflict, op, err)
	}
	return fd, nil
}

// sealedDecision: the decision is present and its digest recomputes.
func sealedDecision(dec *reconciliation.LateDecision) error {
	if dec == nil {
		return fmt.Errorf("%w: no decision", ErrInvalid)
	}
	d, err := reconciliation.DigestOf(dec)
	if err != nil || dec.Decision.Validate() != nil || d != dec.Decision.Digested() {
		return fmt.Errorf("%w: the decision is not sealed", ErrInvalid)
	}
	return nil
}

// DecideFunding is Billing's FundingDecision@1 for the decision's command
// operation (stored insert-or-compare: a lost response returns the stored
// decision). It funds exactly the exposure's amount from the dimension's
// billing account under funding policy revision Policy.Revision, bound to
// the account's current funding source revision, when the exposure is the
// dimension's latest open exposure in the decision's case generation and
// that generation is open; the first decision moves the generation to
// resolving in the same transaction (the next positive difference then
// reserves generation + 1). Refusals: ErrExposureNotOpen,
// ErrLateCaseGeneration, ErrFundingRefused.
func (l *LateCommands) DecideFunding(ctx context.Context, dec *reconciliation.LateDecision) (*reconciliation.FundingDecision, error) {
	if err := sealedDecision(dec); err != nil {
		return nil, err
	}
	pol, err := l.policy()
	if err != nil {
		return nil, err
	}
	op := dec.CommandOperationID()
	now := l.now()
	return db.WithTxV(ctx, l.Pool, func(ctx context.Context, tx pgx.Tx) (*reconciliation.FundingDecision, error) {
		dimID := dec.Case.Dimension.SettlementDimensionID()
		if err := lockCatchUpDimension(ctx, tx, dimID); err != nil {
			return nil, err
		}
		if fd, err := storedFunding(ctx, tx, op); fd != nil || err != nil {
			return fd, err
		}
		s, state, err := openExposureOf(ctx, tx, dec.Case, dec.Exposure)
		if err != nil {
			return nil, err
		}
		if state != LateCaseOpen {
			return nil, fmt.Errorf("%w: case generation %d is %s", ErrLateCaseGeneration, dec.Case.CaseGeneration, state)
		}
		e := s.Exposure
		if pol.MaxAmount != "" {
			if c, err := billingc.CompareAmounts(e.ExposureAmount, pol.MaxAmount); err != nil || c > 0 {
				return nil, fmt.Errorf("%w: exposure amount %s exceeds the policy's %s", ErrFundingRefused, e.ExposureAmount, pol.MaxAmount)
			}
		}
		account := e.Dimension.BillingAccountID
		if _, err := tx.Exec(ctx, `INSERT INTO billing.funding_accounts (billing_account_id, source_revision, created_at, updated_at)
			VALUES ($1, 1, $2, $2) ON CONFLICT (billing_account_id) DO NOTHING`, account, now); err != nil {
			return nil, fmt.Errorf("create funding account: %w", err)
		}
		var rev int64
		if err := tx.QueryRow(ctx, `SELECT source_revision FROM billing.funding_accounts WHERE billing_account_id = $1 FOR SHARE`,
			account).Scan(&rev); err != nil {
			return nil, fmt.Errorf("read funding account: %w", err)
		}
		from := now.Truncate(time.Millisecond)
		fd := &reconciliation.FundingDecision{BillingAccountSourceRevision: rev, Case: dec.Case, Exposure: dec.Exposure,
			FundingPolicyRevision: pol.Revision, FundingAmount: e.ExposureAmount, CommandOperationID: op,
			ValidFrom: from, ValidUntil: from.Add(pol.Validity), EconomicIdentity: e.Dimension.EconomicIdentity,
			JTI: uuid.NewString(), DecidedAt: from}
		body, err := reconciliation.SealAddressed(fd, "fd-")
		if err != nil {
			return nil, fmt.Errorf("seal funding decision: %w", err)
		}
		q := fd.Decision
		if _, err := tx.Exec(ctx, `INSERT INTO billing.funding_decisions (command_operation_id, funding_decision_jti,
			    settlement_dimension_id, case_generation, late_settlement_exposure_id, billing_account_id,
			    billing_account_source_revision, funding_policy_revision, funding_amount, decision_ref, decision_schema_version,
			    decision_digest_algorithm_version, decision_digest, funding_decision_body, valid_until, decided_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::numeric, $10, $11, $12, $13, $14, $15, $16)`,
			op, fd.JTI, dimID, dec.Case.CaseGeneration, dec.Exposure.LateSettlementExposureID, account, rev, pol.Revision,
			fd.FundingAmount, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest, string(body), fd.ValidUntil, fd.DecidedAt); err != nil {
			return nil, fmt.Errorf("insert funding decision: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE billing.late_settlement_cases SET state = 'resolving'
			WHERE settlement_dimension_id = $1 AND case_generation = $2`, dimID, dec.Case.CaseGeneration); err != nil {
			return nil, fmt.Errorf("move late settlement case to resolving: %w", err)
		}
		return fd, nil
	})
}

// addAmounts is a + b, exact.
func addAmounts(a, b string) (string, error) {
	x, err := billingc.ParseAmount(a)
	if err != nil {
		return "", err
	}
	y, err := billingc.ParseAmount(b)
	if err != nil {
		return "", err
	}
	return billingc.FormatSettlementAmount(new(big.Rat).Add(x, y)), nil
}
