package api

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/strict"
	"github.com/oceanway/core/internal/api/apigen"
)

// Refusal is an owner's refusal of a well-formed request: an operation
// returns it as its error and the handler answers its problem with its
// status (a documented one), instead of each operation converting it to
// its own generated response type. Like every non-2xx answer, it commits
// nothing and stores no response.
type Refusal struct {
	Problem apigen.Problem
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("refused: %d %s", r.Problem.Status, r.Problem.Code)
}

// Refuse is the refusal with status, code and detail.
func Refuse(status int, code, detail string) *Refusal {
	return &Refusal{Problem: NewProblem(status, code, detail)}
}

// RefusalRule maps an owner's sentinel error to its documented status and
// problem code.
type RefusalRule struct {
	Err    error
	Status int
	Code   string
}

// RefusalOf is the refusal of the first rule err matches (nil: err is nil
// or a failure, which is not the caller's to fix). The detail is err's
// message, unless it carries a database error (constraint names are not
// the caller's business): then the sentinel's.
func RefusalOf(err error, rules []RefusalRule) *Refusal {
	if err == nil {
		return nil
	}
	for _, r := range rules {
		if errors.Is(err, r.Err) {
			detail := err.Error()
			var pg *pgconn.PgError
			if errors.As(err, &pg) {
				detail = r.Err.Error()
			}
			return Refuse(r.Status, r.Code, detail)
		}
	}
	return nil
}

// Quad is a content address as the API answers it.
func Quad(q strict.Quadruple) apigen.Quadruple {
	return apigen.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: string(q.DigestAlgorithmVersion), Digest: q.Digest}
}

// StrictQuad is a content address the API was sent (its strings as given:
// the owner's strict checks decide).
func StrictQuad(q apigen.Quadruple) strict.Quadruple {
	return strict.Quadruple{Ref: q.Ref, SchemaVersion: q.SchemaVersion, DigestAlgorithmVersion: digest.Algorithm(q.DigestAlgorithmVersion), Digest: q.Digest}
}
