package admission_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/admission"
	admissionschema "github.com/oceanway/core/internal/admission/schema"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
)

// canaryFixture is one admitted run and the core database as its owner
// and as oceanway_admission, which may only insert and read canary proofs.
type canaryFixture struct {
	owner *pgxpool.Pool
	adm   *pgxpool.Pool
	run   admission.Result
}

func setupCanary(t *testing.T) canaryFixture {
	t.Helper()
	pool, svc := setup(t, true)
	run, err := svc.Admit(t.Context(), request())
	require.NoError(t, err)
	return canaryFixture{owner: pool, adm: dbtest.RolePool(t, pool.Config().ConnString(), admissionschema.RoleAdmission), run: run}
}

// proofDoc is a canary proof's JSON object: the keys the database compares
// with the row's columns, and a nonce so that every proof has its own
// content (and so its own ref).
func proofDoc(runID, reservationID, verdict string) map[string]any {
	return map[string]any{"kind": "CanaryProof@1", "runId": runID, "billingReservationId": reservationID, "verdict": verdict, "nonce": uuid.NewString()}
}

// sealProof content-addresses body as the canary does: digest = hex sha256
// of the canonical bytes, ref = canary-proof/<reservation>/<digest>.
func sealProof(t *testing.T, reservationID string, body []byte, verdict, runID string, at time.Time) admission.CanaryProof {
	t.Helper()
	sum := sha256.Sum256(body)
	d := hex.EncodeToString(sum[:])
	return admission.CanaryProof{
		Proof: strict.Quadruple{Ref: "canary-proof/" + reservationID + "/" + d, SchemaVersion: "1", DigestAlgorithmVersion: digest.JCSSHA256V1, Digest: d},
		RunID: runID, BillingReservationID: reservationID, Verdict: verdict, JSON: body, RecordedAt: at.UTC().Truncate(time.Microsecond),
	}
}

func canonical(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	b, err := jcs.Marshal(doc)
	require.NoError(t, err)
	return b
}

// correctProof is a proof whose JSON names the run, its reservation and
// the verdict of its columns.
func (f canaryFixture) correctProof(t *testing.T, verdict string, at time.Time) admission.CanaryProof {
	t.Helper()
	return sealProof(t, f.run.BillingReservationID, canonical(t, proofDoc(f.run.RunID, f.run.BillingReservationID, verdict)), verdict, f.run.RunID, at)
}

func (f canaryFixture) record(t *testing.T, p admission.CanaryProof) error {
	t.Helper()
	return admission.RecordCanaryProof(t.Context(), f.adm, p)
}

func (f canaryFixture) proofs(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, f.owner.QueryRow(t.Context(), "SELECT count(*) FROM admission.canary_proofs").Scan(&n))
	return n
}

// requireNotContentAddressed asserts a check violation of the
// content-address constraint itself (not of a column's own check).
func requireNotContentAddressed(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, pgerrcode.CheckViolation, db.SQLState(err), "error: %v", err)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr))
	require.Equal(t, "canary_proof_content_addressed", pgErr.ConstraintName)
}

// ADR-031, issue 33: a stored canary proof cannot claim another content
// (AD001.canary-proof-content-addressed). PostgreSQL recomputes the sha256
// of proof_json and compares it with canary_proof_digest, the ref must end
// with /<digest>, and proof_json must be a JSON object whose verdict, runId
// and billingReservationId are the row's: a forged row is a check
// violation (23514) and nothing is stored. A correct proof, written by
// oceanway_admission through admission.RecordCanaryProof, is stored once.
func TestGuard_AD001_CanaryProofsContentAddressed(t *testing.T) {
	t.Parallel()
	f := setupCanary(t)
	now := time.Now()
	res, run := f.run.BillingReservationID, f.run.RunID

	good := f.correctProof(t, "passed", now)
	require.NoError(t, f.record(t, good))
	require.NoError(t, f.record(t, good), "the same proof again is the one stored")
	require.Equal(t, 1, f.proofs(t))
	var stored string
	require.NoError(t, f.owner.QueryRow(t.Context(), "SELECT proof_json FROM admission.canary_proofs WHERE canary_proof_ref = $1", good.Proof.Ref).Scan(&stored))
	require.Equal(t, string(good.JSON), stored)

	type forgery struct {
		forge func(t *testing.T) admission.CanaryProof
	}
	without := func(key string) func(t *testing.T) admission.CanaryProof {
		return func(t *testing.T) admission.CanaryProof {
			doc := proofDoc(run, res, "passed")
			delete(doc, key)
			return sealProof(t, res, canonical(t, doc), "passed", run, now)
		}
	}
	forged := map[string]forgery{
		"digest of other bytes": {forge: func(t *testing.T) admission.CanaryProof {
			p := f.correctProof(t, "passed", now)
			other := sealProof(t, res, canonical(t, proofDoc(run, res, "passed")), "passed", run, now)
			p.Proof = other.Proof // ref and digest of another document
			return p
		}},
		"ref not ending in its digest": {forge: func(t *testing.T) admission.CanaryProof {
			p := f.correctProof(t, "passed", now)
			other := sealProof(t, res, canonical(t, proofDoc(run, res, "passed")), "passed", run, now)
			p.Proof.Ref = other.Proof.Ref
			return p
		}},
		"json failed, column passed": {forge: func(t *testing.T) admission.CanaryProof {
			return sealProof(t, res, canonical(t, proofDoc(run, res, "failed")), "passed", run, now)
		}},
		"json passed, column failed": {forge: func(t *testing.T) admission.CanaryProof {
			return sealProof(t, res, canonical(t, proofDoc(run, res, "passed")), "failed", run, now)
		}},
		"json names another run": {forge: func(t *testing.T) admission.CanaryProof {
			return sealProof(t, res, canonical(t, proofDoc(uuid.NewString(), res, "passed")), "passed", run, now)
		}},
		"json names another reservation": {forge: func(t *testing.T) admission.CanaryProof {
			return sealProof(t, res, canonical(t, proofDoc(run, uuid.NewString(), "passed")), "passed", run, now)
		}},
		"json not an object": {forge: func(t *testing.T) admission.CanaryProof {
			return sealProof(t, res, []byte(`["`+run+`","`+res+`","passed","`+uuid.NewString()+`"]`), "passed", run, now)
		}},
		// A key the JSON lacks compares NULL: the CHECK's coalesce refuses it.
		"json without verdict":              {forge: without("verdict")},
		"json without runId":                {forge: without("runId")},
		"json without billingReservationId": {forge: without("billingReservationId")},
	}
	for name, c := range forged {
		t.Run(name, func(t *testing.T) {
			p := c.forge(t)
			requireNotContentAddressed(t, f.record(t, p))
			var n int
			require.NoError(t, f.owner.QueryRow(t.Context(), "SELECT count(*) FROM admission.canary_proofs WHERE canary_proof_ref = $1", p.Proof.Ref).Scan(&n))
			require.Zero(t, n, "nothing stored")
		})
	}
	require.Equal(t, 1, f.proofs(t), "only the correct proof is stored")
}

// ADR-031, issue 33: a canary proof never changes, for any role. As the
// table owner UPDATE and DELETE are refused by the trigger
// (AD001.canary-proof-immutable), among them turning a failed proof into a
// passed one, and TRUNCATE by its own trigger
// (AD001.canary-proof-no-truncate); oceanway_admission holds SELECT and
// INSERT only (42501 before any trigger).
func TestGuard_AD001_CanaryProofsImmutable(t *testing.T) {
	t.Parallel()
	f := setupCanary(t)
	ctx := t.Context()
	failed := f.correctProof(t, "failed", time.Now())
	require.NoError(t, f.record(t, failed))
	passed := f.correctProof(t, "passed", time.Now())
	require.NoError(t, f.record(t, passed))

	for _, stmt := range []string{
		"UPDATE admission.canary_proofs SET verdict = 'passed' WHERE canary_proof_ref = '" + failed.Proof.Ref + "'",
		"UPDATE admission.canary_proofs SET recorded_at = recorded_at + interval '1 second'",
		"DELETE FROM admission.canary_proofs WHERE canary_proof_ref = '" + failed.Proof.Ref + "'",
		"DELETE FROM admission.canary_proofs",
	} {
		requireImmutable(t, execTx(ctx, f.owner, "", stmt), "on admission.canary_proofs is forbidden")
		require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execTx(ctx, f.adm, "", stmt)), stmt)
	}
	requireImmutable(t, execTx(ctx, f.owner, "", "TRUNCATE admission.canary_proofs"), "TRUNCATE on admission.canary_proofs is forbidden")
	require.Equal(t, pgerrcode.InsufficientPrivilege, db.SQLState(execTx(ctx, f.adm, "", "TRUNCATE admission.canary_proofs")))

	require.Equal(t, 2, f.proofs(t))
	var verdict string
	require.NoError(t, f.owner.QueryRow(ctx, "SELECT verdict FROM admission.canary_proofs WHERE canary_proof_ref = $1", failed.Proof.Ref).Scan(&verdict))
	require.Equal(t, "failed", verdict, "a failed proof stays failed")
}

// ADR-031, issue 33: PUBLIC_ADMISSION_MODE may be enabled only on a
// deployment with a passed canary proof. PassedCanaryProof reports none
// ("") while there are no proofs or only failed ones, and otherwise the
// ref of the latest passed proof (by recorded_at), whatever failed proofs
// came after it.
func TestADR031PassedCanaryProofIsTheLatestPassed(t *testing.T) {
	t.Parallel()
	f := setupCanary(t)
	ctx := t.Context()
	passedRef := func() string {
		t.Helper()
		ref, err := admission.PassedCanaryProof(ctx, f.adm)
		require.NoError(t, err)
		return ref
	}
	t0 := time.Now().Add(-time.Hour)
	require.Empty(t, passedRef(), "no proof")

	require.NoError(t, f.record(t, f.correctProof(t, "failed", t0)))
	require.Empty(t, passedRef(), "only a failed proof")

	first := f.correctProof(t, "passed", t0.Add(time.Minute))
	require.NoError(t, f.record(t, first))
	require.Equal(t, first.Proof.Ref, passedRef())

	latest := f.correctProof(t, "passed", t0.Add(3*time.Minute))
	require.NoError(t, f.record(t, latest))
	require.NoError(t, f.record(t, f.correctProof(t, "passed", t0.Add(2*time.Minute))), "recorded later, but older")
	require.NoError(t, f.record(t, f.correctProof(t, "failed", t0.Add(4*time.Minute))), "a later failed proof")
	require.Equal(t, latest.Proof.Ref, passedRef())
}
