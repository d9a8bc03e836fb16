package dispatcher

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/outbox/transport"
)

// recordPublicationSQL calls the controlled published_at function (OB-PUB-1);
// it answers not_complete or complete and raises when the ack is invalid.
const recordPublicationSQL = `SELECT outbox.record_publication($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// NotifyChannel is the LISTEN/NOTIFY channel append transactions signal on;
// the payload is the destination.
const NotifyChannel = "outbox_deliveries"

var (
	//go:embed sql/claim.sql
	claimSQL string
	//go:embed sql/recover.sql
	recoverSQL string
	//go:embed sql/ack.sql
	ackSQL string
	//go:embed sql/retry.sql
	retrySQL string
	//go:embed sql/quarantine.sql
	quarantineSQL string
	//go:embed sql/renew.sql
	renewSQL string
)

// ClaimSQL returns the claim statement (for plan tests and tools).
func ClaimSQL() string { return claimSQL }

// ErrLeaseLost means the fence no longer holds: another worker re-claimed
// the delivery, recovery finished the attempt, or the lease expired. The
// late outcome was not written.
var ErrLeaseLost = errors.New("dispatcher: lease lost")

// AckRejectedError wraps an acknowledgement that failed verification; it is
// classified non-retryable and the delivery is quarantined, never acked.
type AckRejectedError struct {
	ReasonCode string // low-cardinality code, e.g. ack_projection_target_mismatch
	Err        error
}

func (e *AckRejectedError) Error() string {
	return "ack rejected (" + e.ReasonCode + "): " + e.Err.Error()
}
func (e *AckRejectedError) Unwrap() error   { return e.Err }
func (e *AckRejectedError) Retryable() bool { return false }
func (e *AckRejectedError) Code() string    { return e.ReasonCode }

// Fence is the exact term of a claim. Every write after the claim carries it.
type Fence struct {
	Destination route.Destination
	EventID     string
	AttemptID   string
	LeaseToken  string
}

// Claimed is one delivery this worker holds a lease on.
type Claimed struct {
	Fence
	Member             route.Member
	DeliverySetVersion int64
	AttemptCount       int
	LeaseExpiresAt     time.Time
	CreatedAt          time.Time // delivery creation = append commit time
	EventType          string
	EventSchemaVersion string
	Envelope           []byte
	EnvelopeDigest     digest.Digest
}

// Delivery returns what the transport hands to the consumer.
func (c Claimed) Delivery() transport.Delivery {
	return transport.Delivery{
		EventID: c.EventID, EventType: c.EventType, EventSchemaVersion: c.EventSchemaVersion,
		Envelope: c.Envelope, EnvelopeDigest: c.EnvelopeDigest, Member: c.Member,
		AttemptID: c.AttemptID, AttemptNumber: c.AttemptCount,
	}
}

// Store runs the dispatcher's fenced statements against one producer database.
type Store struct {
	pool    *pgxpool.Pool
	timeout time.Duration
}

// NewStore builds a store; every statement is bounded by timeout.
func NewStore(pool *pgxpool.Pool, timeout time.Duration) *Store {
	return &Store{pool: pool, timeout: timeout}
}

// ClaimParams are the arguments of one claim.
type ClaimParams struct {
	Owner        string
	Destinations []route.Destination // empty = all
	Limit        int
	Lease        time.Duration
}

func destinationArgs(dests []route.Destination) []string {
	if len(dests) == 0 {
		dests = route.Destinations
	}
	out := make([]string, len(dests))
	for i, d := range dests {
		out[i] = string(d)
	}
	return out
}

// Claim leases up to p.Limit eligible deliveries and starts their attempts
// in one statement (OB-CLAIM-1).
func (s *Store) Claim(ctx context.Context, p ClaimParams) ([]Claimed, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, claimSQL, p.Owner, destinationArgs(p.Destinations), p.Limit, p.Lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Claimed
	for rows.Next() {
		var (
			c                         Claimed
			dest, envelopeText, alg   string
			eventID, token, attemptID pgtype.UUID
			projName                  *string
			projVersion               *int64
		)
		if err := rows.Scan(&eventID, &dest, &c.Member.ConsumerName, &c.DeliverySetVersion, &c.Member.ExpectedReceiptType,
			&c.Member.ExpectedReceiptSchemaVersion, &projName, &projVersion, &c.Member.Mandatory,
			&token, &c.LeaseExpiresAt, &attemptID, &c.AttemptCount, &c.CreatedAt,
			&c.EventType, &c.EventSchemaVersion, &envelopeText, &alg, &c.EnvelopeDigest.Value); err != nil {
			return nil, err
		}
		c.Destination = route.Destination(dest)
		c.EventID, c.LeaseToken, c.AttemptID = eventID.String(), token.String(), attemptID.String()
		c.Member.Destination = c.Destination
		c.Member.EventType, c.Member.EventSchemaVersion = c.EventType, c.EventSchemaVersion
		if projName != nil && projVersion != nil {
			c.Member.ProjectionTarget = route.Required(*projName, *projVersion)
		}
		c.Envelope = []byte(envelopeText)
		c.EnvelopeDigest.Algorithm = digest.Algorithm(alg)
		out = append(out, c)
	}
	return out, rows.Err()
}

// RecoverExpired finishes expired, unfinished attempts as
// lease_expired_unknown and returns their deliveries to pending
// (OB-CLAIM-3); it reports how many per destination.
func (s *Store) RecoverExpired(ctx context.Context, dests []route.Destination, limit int) (map[route.Destination]int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return RecoverExpiredTx(ctx, s.pool, dests, limit)
}

// RecoverExpiredTx is RecoverExpired on a caller's executor (a transaction
// in tests that stop recovery at an exact point).
func RecoverExpiredTx(ctx context.Context, q db.Executor, dests []route.Destination, limit int) (map[route.Destination]int, error) {
	rows, err := q.Query(ctx, recoverSQL, destinationArgs(dests), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[route.Destination]int{}
	for rows.Next() {
		var dest string
		var n int
		if err := rows.Scan(&dest, &n); err != nil {
			return nil, err
		}
		out[route.Destination(dest)] = n
	}
	return out, rows.Err()
}

// fenced runs one fenced statement that returns the finished attempt id;
// no row means the fence did not hold.
func fenced(ctx context.Context, q db.Executor, sql string, args ...any) error {
	var attempt pgtype.UUID
	err := q.QueryRow(ctx, sql, args...).Scan(&attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrLeaseLost
	}
	if db.SQLState(err) == db.CodeUniqueViolation {
		// A racing writer appended the attempt's finish first.
		return ErrLeaseLost
	}
	return err
}

func fenceArgs(f Fence) []any {
	return []any{string(f.Destination), f.EventID, f.AttemptID, f.LeaseToken}
}

// Renew extends the lease of a held attempt.
func (s *Store) Renew(ctx context.Context, f Fence, lease time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	tag, err := s.pool.Exec(ctx, renewSQL, append(fenceArgs(f), lease.Milliseconds())...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Retry finishes the attempt as retryable and schedules the delivery again.
func (s *Store) Retry(ctx context.Context, f Fence, backoff time.Duration, code string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return fenced(ctx, s.pool, retrySQL, append(fenceArgs(f), backoff.Milliseconds(), code)...)
}

// maxReasonLen bounds the stored quarantine reason.
const maxReasonLen = 1000

// Quarantine finishes the attempt and moves the delivery to the terminal
// quarantined state with an explicit quarantine row. retryableOutcome marks
// a retryable failure quarantined by the configured attempt limit.
func (s *Store) Quarantine(ctx context.Context, f Fence, code, reason string, retryableOutcome bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	outcome := "non_retryable"
	if retryableOutcome {
		outcome = "retryable"
	}
	reason = truncateUTF8(strings.ToValidUTF8(code+": "+reason, "?"), maxReasonLen)
	return fenced(ctx, s.pool, quarantineSQL, append(fenceArgs(f), outcome, code, reason)...)
}

// truncateUTF8 cuts s to at most n bytes on a character boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// VerifyAndAck verifies the consumer's ack against the frozen member and the
// event (OB-DELIVER-4) and records it (OB-DELIVER-5). A verification failure
// is an *AckRejectedError and nothing is written.
func (s *Store) VerifyAndAck(ctx context.Context, c Claimed, res transport.Result) error {
	v, err := VerifyResult(c, res)
	if err != nil {
		return err
	}
	return s.AckOne(ctx, v)
}

// VerifiedAck is an acknowledgement that passed VerifyResult. Its fields are
// unexported: the only way to record an ack is to verify it first.
type VerifiedAck struct {
	claimed Claimed
	ack     *receipt.ActiveConsumerAck
}

// VerifyResult checks a consumer result against the claimed delivery: the
// ActiveConsumerAck@1 and its receipt body against the frozen member and the
// event as stored (never against anything the consumer reports).
func VerifyResult(c Claimed, res transport.Result) (VerifiedAck, error) {
	if res.Ack == nil {
		return VerifiedAck{}, &AckRejectedError{ReasonCode: "ack_missing", Err: receipt.ErrAckInvalid}
	}
	env, err := envelope.DecodeEnvelope(c.Envelope)
	if err != nil {
		// The stored event no longer decodes: an invariant is broken.
		return VerifiedAck{}, &AckRejectedError{ReasonCode: "stored_event_invalid", Err: err}
	}
	facts := receipt.EventFacts{
		EventID: c.EventID, EventType: c.EventType, EventSchemaVersion: c.EventSchemaVersion,
		EnvelopeDigest: c.EnvelopeDigest, Identity: env.Identity(),
	}
	if err := receipt.VerifyAck(facts, c.Member, res.Ack, res.ReceiptBody); err != nil {
		return VerifiedAck{}, &AckRejectedError{ReasonCode: ackRejectCode(err), Err: err}
	}
	return VerifiedAck{claimed: c, ack: res.Ack}, nil
}

// readCommitted is the isolation of every ack transaction:
// outbox.record_publication needs a fresh snapshot per statement to see
// sibling acks (it raises OW013 otherwise), whatever the server default is.
var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// AckOne records one verified ack in its own transaction.
func (s *Store) AckOne(ctx context.Context, v VerifiedAck) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return db.WithTxOptions(ctx, s.pool, readCommitted, func(ctx context.Context, tx pgx.Tx) error {
		return AckTx(ctx, tx, v)
	})
}

// AckTx records a verified ack inside tx (READ COMMITTED): the fenced
// acknowledged transition with its success finish, then the controlled
// published_at function, whose not_complete answer is a normal result.
func AckTx(ctx context.Context, tx pgx.Tx, v VerifiedAck) error {
	c, ack := v.claimed, v.ack
	q := ack.AppliedReceipt.Receipt
	err := fenced(ctx, tx, ackSQL, append(fenceArgs(c.Fence),
		ack.ConsumerName, c.Member.ExpectedReceiptType, q.Ref, q.SchemaVersion,
		string(q.DigestAlgorithmVersion), q.Digest,
		string(ack.EventEnvelopeDigest.Algorithm), ack.EventEnvelopeDigest.Value)...)
	if err != nil {
		return err
	}
	var state string
	if err := tx.QueryRow(ctx, recordPublicationSQL, c.EventID, string(c.Destination), ack.ConsumerName,
		c.AttemptID, c.LeaseToken, c.Member.ExpectedReceiptType, q.Ref, q.SchemaVersion, string(q.DigestAlgorithmVersion), q.Digest,
		string(ack.EventEnvelopeDigest.Algorithm), ack.EventEnvelopeDigest.Value).Scan(&state); err != nil {
		return fmt.Errorf("record publication: %w", err)
	}
	return nil
}

// ackRejectCode maps a VerifyAck reason to a low-cardinality code.
func ackRejectCode(err error) string {
	for _, r := range []struct {
		reason error
		code   string
	}{
		{receipt.ErrAckInvalid, "ack_invalid"},
		{receipt.ErrMemberEventMismatch, "ack_member_event_mismatch"},
		{receipt.ErrDestinationMismatch, "ack_destination_mismatch"},
		{receipt.ErrConsumerMismatch, "ack_consumer_mismatch"},
		{receipt.ErrReceiptTypeMismatch, "ack_receipt_type_mismatch"},
		{receipt.ErrReceiptSchemaMismatch, "ack_receipt_schema_mismatch"},
		{receipt.ErrProjectionTargetMismatch, "ack_projection_target_mismatch"},
		{receipt.ErrEnvelopeAlgorithmMismatch, "ack_envelope_algorithm_mismatch"},
		{receipt.ErrEnvelopeDigestMismatch, "ack_envelope_digest_mismatch"},
		{receipt.ErrReceiptInvalid, "ack_receipt_invalid"},
		{receipt.ErrReceiptQuadrupleMismatch, "ack_receipt_quadruple_mismatch"},
		{receipt.ErrReceiptDigestMismatch, "ack_receipt_digest_mismatch"},
		{receipt.ErrEventIdentityMismatch, "ack_event_identity_mismatch"},
		{receipt.ErrBusinessIdentityMismatch, "ack_business_identity_mismatch"},
		{receipt.ErrEventIdentityIncomplete, "ack_event_identity_incomplete"},
	} {
		if errors.Is(err, r.reason) {
			return r.code
		}
	}
	return "ack_rejected"
}
