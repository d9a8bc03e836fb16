package cutover

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/operations/readmodel"
)

// Build is one shadow build with its candidate and readiness proof.
type Build struct {
	ProjectionVersion    int64      `db:"projection_version" json:"projectionVersion"`
	State                string     `db:"state" json:"state"`
	ClaimOwner           string     `db:"claim_owner" json:"claimOwner"`
	CandidateID          *string    `db:"candidate_id" json:"candidateId"`
	CandidateMembers     *int64     `db:"candidate_members" json:"candidateMembers"`
	CandidateFrozenAt    *time.Time `db:"candidate_frozen_at" json:"candidateFrozenAt"`
	ReadinessProofDigest *string    `db:"readiness_proof_digest" json:"readinessProofDigest"`
	ProvedAt             *time.Time `db:"proved_at" json:"provedAt"`
	// ProofBody is the canonical readiness proof (RFC 8785 text).
	ProofBody *string   `db:"proof_body" json:"proofBody"`
	CreatedAt time.Time `db:"created_at" json:"createdAt"`
	UpdatedAt time.Time `db:"updated_at" json:"updatedAt"`
}

// Version is the state of one projection version.
type Version struct {
	ProjectionVersion int64 `json:"projectionVersion"`
	Active            bool  `json:"active"`
	Receipts          int64 `json:"receipts"`
	// Missing counts source events without a receipt of this version.
	Missing        int64 `json:"missing"`
	UnresolvedGaps int64 `json:"unresolvedGaps"`
	Unsupported    int64 `json:"unsupported"`
	// Completeness is the read model's completeness answer for this
	// version (OPS-4), computed per version.
	Completeness readmodel.Completeness `json:"completeness"`
	Fingerprint  Print                  `json:"fingerprint"`
}

// Status is the projection's versions, active pointer and shadow builds.
type Status struct {
	ProjectionName string    `json:"projectionName"`
	ActiveVersion  int64     `json:"activeVersion"`
	Versions       []Version `json:"versions"`
	Builds         []Build   `json:"builds"`
}

// ReadStatus reads the status of a projection (read-only).
func ReadStatus(ctx context.Context, pool Pool, name string) (Status, error) {
	if name == "" {
		name = Config{}.withDefaults().ProjectionName
	}
	out := Status{ProjectionName: name, Versions: []Version{}, Builds: []Build{}}
	err := db.WithTxOptions(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if out.ActiveVersion, err = activeVersion(ctx, tx, name); err != nil {
			return err
		}
		args := pgx.NamedArgs{"projection_name": name}
		rows, err := tx.Query(ctx, qStatusVersions, args)
		if err != nil {
			return fmt.Errorf("read versions: %w", err)
		}
		type vrow struct {
			ProjectionVersion int64 `db:"projection_version"`
			Receipts          int64 `db:"receipts"`
			Missing           int64 `db:"missing"`
			UnresolvedGaps    int64 `db:"unresolved_gaps"`
			Unsupported       int64 `db:"unsupported"`
		}
		vs, err := pgx.CollectRows(rows, pgx.RowToStructByName[vrow])
		if err != nil {
			return fmt.Errorf("read versions: %w", err)
		}
		for _, v := range vs {
			out.Versions = append(out.Versions, Version{ProjectionVersion: v.ProjectionVersion, Active: v.ProjectionVersion == out.ActiveVersion,
				Receipts: v.Receipts, Missing: v.Missing, UnresolvedGaps: v.UnresolvedGaps, Unsupported: v.Unsupported})
		}
		rows, err = tx.Query(ctx, qStatusBuilds, args)
		if err != nil {
			return fmt.Errorf("read shadow builds: %w", err)
		}
		out.Builds, err = pgx.CollectRows(rows, pgx.RowToStructByName[Build])
		if err != nil {
			return fmt.Errorf("read shadow builds: %w", err)
		}
		for i := range out.Versions {
			if out.Versions[i].Fingerprint, err = Fingerprint(ctx, tx, name, out.Versions[i].ProjectionVersion); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	rm := readmodel.New(pool)
	for i := range out.Versions {
		c, err := rm.Completeness(ctx, readmodel.Params{Projection: route.Required(name, out.Versions[i].ProjectionVersion)})
		if err != nil {
			return out, err
		}
		out.Versions[i].Completeness = c
	}
	return out, nil
}
