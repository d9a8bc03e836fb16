package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/internal/db"
)

// KeyStore keeps the first response of every (caller, operation, key) in the
// owner's database, written in the operation's own transaction: Core's in
// admission.api_idempotency_keys (as oceanway_admission), Execution's in
// execution.api_idempotency_keys, the Gateway's in
// gateway.api_idempotency_keys (each as the owner's role).
type KeyStore struct {
	Pool *pgxpool.Pool
	// Table is the owner's key table (KeyTables[owner]).
	Table string
}

// KeyTables is each owner's idempotency key table (the only names a
// KeyStore may use: they are written into its statements).
var KeyTables = map[Owner]string{
	OwnerCore:      "admission.api_idempotency_keys",
	OwnerExecution: "execution.api_idempotency_keys",
	OwnerGateway:   "gateway.api_idempotency_keys",
	// Operations' keys live in the core database, as oceanway_operations.
	OwnerOperations: "operations.api_idempotency_keys",
}

func (k *KeyStore) check(o Owner) error {
	if k.Pool == nil || k.Table != KeyTables[o] {
		return fmt.Errorf("api: owner %s's key store must be its pool and table %s (got %q)", o, KeyTables[o], k.Table)
	}
	return nil
}

// TxOf returns the transaction a mutating operation runs in: the owner's
// code takes it as its db.Beginner (its own transactions become savepoints
// of this one), so its facts and the stored response commit together. ok is
// false outside a mutating operation.
func TxOf(ctx context.Context) (tx pgx.Tx, ok bool) {
	tx, ok = ctx.Value(keyTx).(pgx.Tx)
	return tx, ok
}

// idempotent runs a mutating operation under its Idempotency-Key (a read
// passes through). In one transaction on the owner's database: the key's
// advisory lock (taken: 409, the first call still runs), the stored first
// response (same request: replayed byte for byte; another request: 422), or
// the operation itself and, when it succeeds, its stored response. Nothing
// is written unless the operation succeeded and the transaction committed;
// a failure leaves the key free for a retry.
func (s *server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := CallOf(r.Context())
		if call.IdempotencyKey == "" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			WriteProblem(w, http.StatusBadRequest, CodeInvalidRequest, "request body unreadable")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		fingerprint, err := requestFingerprint(r.Method, r.URL.Path, body)
		if err != nil {
			WriteProblem(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
			return
		}
		rec := &recorder{header: http.Header{}}
		var replay *storedResponse
		keys := s.cfg.Served[call.Owner].Keys
		err = db.WithTx(r.Context(), keys.Pool, func(ctx context.Context, tx pgx.Tx) error {
			var locked bool
			if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`,
				lockName(call)).Scan(&locked); err != nil {
				return err
			}
			if !locked {
				return errInProgress
			}
			var stored storedResponse
			err := tx.QueryRow(ctx, `SELECT request_sha256, response_status, response_content_type, response_body
				FROM `+keys.Table+` WHERE caller_workload = $1 AND operation_id = $2 AND idempotency_key = $3`,
				call.Caller, call.OperationID, call.IdempotencyKey).Scan(&stored.fingerprint, &stored.status, &stored.contentType, &stored.body)
			switch {
			case err == nil && stored.fingerprint != fingerprint:
				return errKeyReused
			case err == nil:
				replay = &stored
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
			next.ServeHTTP(rec, r.WithContext(context.WithValue(ctx, keyTx, tx)))
			if rec.status < 200 || rec.status > 299 {
				return errNotStored // the answer goes out as it is; nothing commits
			}
			_, err = tx.Exec(ctx, `INSERT INTO `+keys.Table+`
				(caller_workload, operation_id, idempotency_key, request_sha256, response_status, response_content_type, response_body)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				call.Caller, call.OperationID, call.IdempotencyKey, fingerprint, rec.status, rec.header.Get("Content-Type"), rec.body.Bytes())
			return err
		})
		switch {
		case errors.Is(err, errInProgress):
			WriteProblem(w, http.StatusConflict, CodeIdempotencyInProgress, "retry once the first request with this key has answered")
		case errors.Is(err, errKeyReused):
			WriteProblem(w, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused,
				fmt.Sprintf("Idempotency-Key %q was first used for %s with another request body", call.IdempotencyKey, call.OperationID))
		case errors.Is(err, errNotStored):
			rec.writeTo(w)
		case err != nil:
			s.cfg.Log.Warn("api: idempotent operation not committed", "operation", call.OperationID, "err", err)
			WriteProblem(w, http.StatusServiceUnavailable, CodeUnavailable, "nothing was committed; retry with the same Idempotency-Key")
		case replay != nil:
			w.Header().Set("Content-Type", replay.contentType)
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(replay.status)
			_, _ = w.Write(replay.body)
		default:
			rec.writeTo(w)
		}
	})
}

// lockName names a key's advisory lock: caller, operation and key joined
// by spaces, which none of them may contain.
func lockName(c Call) string { return c.Caller + " " + c.OperationID + " " + c.IdempotencyKey }

var (
	errInProgress = errors.New("api: idempotency key in progress")
	errKeyReused  = errors.New("api: idempotency key reused with another request")
	errNotStored  = errors.New("api: operation did not succeed; nothing stored")
)

type storedResponse struct {
	fingerprint string
	status      int
	contentType string
	body        []byte
}

// requestFingerprint identifies the request a key was used for: method,
// path and the canonical (RFC 8785) form of the JSON body, so the same
// request written with other whitespace or key order is the same request.
// An operation without a request body (issueRunExecutionToken, closeRun)
// is the empty body.
func requestFingerprint(method, path string, body []byte) (string, error) {
	var canonical []byte
	if len(bytes.TrimSpace(body)) > 0 {
		c, err := jcs.Canonicalize(body)
		if err != nil {
			return "", fmt.Errorf("request body is not canonicalizable JSON: %w", err)
		}
		canonical = c
	}
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s %s\n", method, path)
	_, _ = h.Write(canonical)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// recorder holds an operation's answer until its transaction commits.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) writeTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}
