// Package inboxtest is the consumer conformance suite (DESIGN.md §4): one
// suite every consumer — Operations projector, Metering input processor,
// Billing finalization coordinator, Billing settlement catch-up — must pass,
// run against a fresh, real database per subtest.
//
// A consumer's test calls Run with a factory that builds a Subject: the
// consumer's ConsumerFunc, its frozen members, chains of valid events, a
// fingerprint of its durable state and a way to provoke a temporary
// failure. The suite covers (requirement IDs in the subtest names):
//
//   - duplicate delivery returns the first receipt byte for byte (CON-1);
//   - concurrent duplicate deliveries of one event are serialized and all
//     return that one receipt (CON-1);
//   - a crash after the consumer committed but before the ack: the
//     redelivery (a new attempt) returns the same ack and receipt (OB-DELIVER-6);
//   - reordering: a chain delivered in reverse order (retryable waits
//     allowed, nothing non-retryable) converges to the state of in-order
//     delivery (OPS-2 for the projector);
//   - the same event id with another envelope digest is non_retryable and
//     writes nothing (CON-1);
//   - a carried envelope digest that does not recompute, and a malformed
//     envelope, are non_retryable and write nothing;
//   - an unknown (alias) event pair is non_retryable and writes nothing (CON-3);
//   - a temporary failure is retryable and writes nothing; the delivery then
//     succeeds (CON-2).
//
// RunBatch runs the same suite through the consumer's batch entry point
// (each delivery a batch of one), plus the batch cases: a batch of new,
// replayed, duplicated, conflicting and unverifiable deliveries answers each
// exactly as Consume does one by one and leaves the same state (CON-1,
// CON-2, OB-DELIVER-6); concurrent batches of the same events in different
// orders apply each event once (CON-1).
package inboxtest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/jcs"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/inbox"
	"github.com/oceanway/core/internal/outbox/transport"
)

// Subject is one consumer under test, over its own fresh database.
type Subject struct {
	// Consume is the consumer (what transport.InProcess calls).
	Consume transport.ConsumerFunc
	// Member returns the frozen member a delivery of the pair carries.
	Member func(eventType, eventSchemaVersion string) route.Member
	// Chains are independent sequences of valid envelopes, each in the
	// order in which every event applies directly. Chains must be the same
	// (same ids and content) for every Subject the factory builds.
	Chains [][]*envelope.Envelope
	// State returns a deterministic fingerprint of everything the consumer
	// durably decided: receipts (without repository refs and own times) and
	// effects. Audit of how the state was reached (resolved waits, linked
	// pending rows, attempt counters) may be left out.
	State func(ctx context.Context) (string, error)
	// Block provokes a temporary failure of the consumer's next deliveries
	// (a held lock, an unavailable owner read) and returns the function that
	// lifts it.
	Block func(t *testing.T) (unblock func())
	// ConsumeBatch is the consumer's batch entry point (inbox.ConsumeBatch);
	// RunBatch needs it, Run ignores it.
	ConsumeBatch transport.BatchConsumerFunc
}

// Factory builds a fresh Subject for one subtest.
type Factory func(t *testing.T) Subject

// Run runs every case of the suite as a parallel subtest, each against
// fresh Subjects from newSubject.
func Run(t *testing.T, newSubject Factory) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newSubject)
		})
	}
}

// RunBatch runs the suite through Subject.ConsumeBatch (every delivery a
// batch of one) and the batch cases, each as a parallel subtest against
// fresh Subjects from newSubject.
func RunBatch(t *testing.T, newSubject Factory) {
	single := func(t *testing.T) Subject {
		s := newSubject(t)
		require.NotNil(t, s.ConsumeBatch, "RunBatch needs Subject.ConsumeBatch")
		s.Consume = func(ctx context.Context, d transport.Delivery) (transport.Result, error) {
			return s.ConsumeBatch(ctx, []transport.Delivery{d})[0].Unpack()
		}
		return s
	}
	for _, c := range cases {
		t.Run("BatchOfOne/"+c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, single)
		})
	}
	for _, c := range batchCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newSubject)
		})
	}
}

// cases are the suite, each a named subtest of Run: a consumer that fails
// one sees its name (go test -run 'TestConformance/CON-1' runs one group).
var cases = []struct {
	name string
	run  func(t *testing.T, newSubject Factory)
}{
	{"CON-1/DuplicateDeliveryReturnsFirstReceipt", duplicateDeliveryReturnsFirstReceipt},
	{"CON-1/ConcurrentDuplicatesSerialize", concurrentDuplicatesSerialize},
	{"OB-DELIVER-6/CrashAfterCommitBeforeAck", crashAfterCommitBeforeAck},
	{"OPS-2/ReorderingConverges", reorderingConverges},
	{"CON-1/SameEventIDOtherDigestIsNonRetryable", sameEventIDOtherDigestIsNonRetryable},
	{"EnvelopeDigestMismatchIsNonRetryable", envelopeDigestMismatchIsNonRetryable},
	{"MalformedEnvelopeIsNonRetryable", malformedEnvelopeIsNonRetryable},
	{"CON-3/UnknownPairIsNonRetryable", unknownPairIsNonRetryable},
	{"CON-2/RetryableWritesNothing", retryableWritesNothing},
}

// batchCases are RunBatch's own cases.
var batchCases = []struct {
	name string
	run  func(t *testing.T, newSubject Factory)
}{
	{"CON-1/CON-2/OB-DELIVER-6/BatchAnswersLikeConsume", batchAnswersLikeConsume},
	{"CON-1/ConcurrentBatchesApplyOnce", concurrentBatchesApplyOnce},
}

// batchAnswersLikeConsume: one batch of a redelivered (replayed) event, the
// same event id with another digest, every other chain event (new), a
// duplicate of a new event, another digest of a new event and an envelope
// digest that does not recompute answers each delivery as Consume answers
// it one by one on a twin subject, replays byte for byte, and leaves the
// twin's state: a conflict or an unverifiable delivery in the middle rolls
// back nothing of the others (CON-1, CON-2, OB-DELIVER-6).
func batchAnswersLikeConsume(t *testing.T, newSubject Factory) {
	batch, single := newSubject(t), newSubject(t)
	require.NotNil(t, batch.ConsumeBatch, "RunBatch needs Subject.ConsumeBatch")
	first := batch.Chains[0][0]
	firstAck := mustAck(t, batch, first)
	mustAck(t, single, first)

	otherDigest := func(e *envelope.Envelope) *envelope.Envelope {
		o := *e
		o.OccurredAt = e.OccurredAt.Add(time.Second)
		changed, err := envelope.Build(o)
		require.NoError(t, err)
		return changed
	}
	type item struct {
		e      *envelope.Envelope
		tamper bool // envelope digest that does not recompute
	}
	items := []item{{e: first}, {e: otherDigest(first)}}
	var news []*envelope.Envelope
	for i, chain := range batch.Chains {
		for j, e := range chain {
			if i == 0 && j == 0 {
				continue
			}
			news = append(news, e)
			items = append(items, item{e: e})
			if len(news) == 1 {
				items = append(items, item{e: e, tamper: true})
			}
		}
	}
	require.NotEmpty(t, news, "RunBatch needs more than one chain event")
	last := news[len(news)-1]
	items = append(items, item{e: last}, item{e: otherDigest(last)})

	deliveries := func(s Subject) []transport.Delivery {
		out := make([]transport.Delivery, len(items))
		for i, it := range items {
			out[i] = Delivery(s, it.e)
			if it.tamper {
				out[i].EnvelopeDigest.Value = fmt.Sprintf("%064x", 1)
			}
		}
		return out
	}
	answers := batch.ConsumeBatch(context.Background(), deliveries(batch))
	require.Len(t, answers, len(items))
	bodies := map[string][]byte{first.EventID: firstAck.ReceiptBody}
	for i, d := range deliveries(single) {
		want, wantErr := single.Consume(context.Background(), d)
		got, gotErr := answers[i].Unpack()
		if wantErr != nil {
			require.Error(t, gotErr, "delivery %d (%s %s): Consume answers %v", i, d.EventType, d.EventID, wantErr)
			wr, wc := transport.RetryableAndCode(wantErr)
			gr, gc := transport.RetryableAndCode(gotErr)
			require.Equal(t, []any{wr, wc}, []any{gr, gc}, "delivery %d (%s %s): %v", i, d.EventType, d.EventID, gotErr)
			continue
		}
		require.NoError(t, gotErr, "delivery %d (%s %s)", i, d.EventType, d.EventID)
		require.NotNil(t, want.Ack)
		require.NotNil(t, got.Ack)
		require.Equal(t, d.EventID, got.Ack.EventID)
		if b, ok := bodies[d.EventID]; ok {
			require.Equal(t, b, got.ReceiptBody, "delivery %d: a replay returns the first receipt byte for byte", i)
		}
		bodies[d.EventID] = got.ReceiptBody
	}
	require.Equal(t, state(t, single), state(t, batch), "a batch must leave the state of one-by-one delivery")
}

// concurrentBatchesApplyOnce: batches of every chain event in order, in
// reverse and interleaved, run at once on their own sessions: none fails
// other than with a recoverable wait (an event ahead of its chain) or a
// lock timeout, never a deadlock; every event is applied once (all answers
// of one event carry one receipt), and the state converges to the in-order
// state (CON-1).
func concurrentBatchesApplyOnce(t *testing.T, newSubject Factory) {
	inOrder := newSubject(t)
	var all []*envelope.Envelope
	for _, chain := range inOrder.Chains {
		for _, e := range chain {
			mustAck(t, inOrder, e)
			all = append(all, e)
		}
	}
	want := state(t, inOrder)

	s := newSubject(t)
	require.NotNil(t, s.ConsumeBatch, "RunBatch needs Subject.ConsumeBatch")
	reversed := make([]*envelope.Envelope, len(all))
	for i, e := range all {
		reversed[len(all)-1-i] = e
	}
	var interleaved []*envelope.Envelope
	for i := 0; i < len(all); i += 2 {
		interleaved = append(interleaved, all[i])
	}
	for i := 1; i < len(all); i += 2 {
		interleaved = append(interleaved, all[i])
	}
	orders := [][]*envelope.Envelope{all, reversed, interleaved, reversed}
	answers := make([][]transport.Answer, len(orders))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k, order := range orders {
		ds := make([]transport.Delivery, len(order))
		for i, e := range order {
			ds[i] = Delivery(s, e)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[k] = s.ConsumeBatch(context.Background(), ds)
		}()
	}
	close(start)
	wg.Wait()
	bodies := map[string][]byte{}
	for k, order := range orders {
		require.Len(t, answers[k], len(order))
		for i, a := range answers[k] {
			e := order[i]
			if a.Err != nil {
				// A batch waits for another's whole batch on a shared
				// receipt key: the consumer's lock timeout may end that
				// wait (retryable, nothing written); a deadlock
				// (serialization_conflict) or anything else may not.
				retryable, code := transport.RetryableAndCode(a.Err)
				lockWait := retryable && (code == inbox.CodeLockUnavailable || code == inbox.CodeTimeout)
				require.True(t, transport.IsRecoverableWait(a.Err) || lockWait,
					"batch %d, %s %s: only a recoverable wait or a lock timeout may fail, got %v", k, e.EventType, e.EventID, a.Err)
				continue
			}
			if b, ok := bodies[e.EventID]; ok {
				require.Equal(t, b, a.Result.ReceiptBody, "event %s applied twice", e.EventID)
			}
			bodies[e.EventID] = a.Result.ReceiptBody
		}
	}
	deliverUntilAcked(t, s, all)
	require.Equal(t, want, state(t, s))
}

// duplicateDeliveryReturnsFirstReceipt: a duplicate delivery of every chain
// event returns the first receipt and ack byte for byte and changes no state
// (CON-1).
func duplicateDeliveryReturnsFirstReceipt(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	for _, chain := range s.Chains {
		for _, e := range chain {
			first := mustAck(t, s, e)
			before := state(t, s)
			again := mustAck(t, s, e)
			require.Equal(t, first.ReceiptBody, again.ReceiptBody, "receipt body must be byte-identical")
			require.Equal(t, first.Ack, again.Ack)
			require.Equal(t, before, state(t, s), "a duplicate must not change state")
		}
	}
}

// concurrentDuplicatesSerialize: concurrent duplicate deliveries of one event
// are serialized and all return the one receipt (CON-1).
func concurrentDuplicatesSerialize(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	e := s.Chains[0][0]
	const n = 8
	results := make([]transport.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = s.Consume(context.Background(), Delivery(s, e))
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "delivery %d", i)
		require.Equal(t, results[0].ReceiptBody, results[i].ReceiptBody, "delivery %d got another receipt", i)
		require.Equal(t, results[0].Ack, results[i].Ack)
	}
}

// crashAfterCommitBeforeAck: the consumer committed, the dispatcher died
// before recording the ack: the redelivery (a new attempt) returns the same
// ack and receipt and changes nothing (OB-DELIVER-6).
func crashAfterCommitBeforeAck(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	e := s.Chains[0][0]
	// Attempt 1: the consumer commits, the dispatcher dies before it
	// records the ack; the result is lost.
	lost := mustAck(t, s, e)
	committed := state(t, s)
	// Attempt 2 after lease-expiry recovery: a new attempt id.
	again := mustAck(t, s, e)
	require.Equal(t, lost.ReceiptBody, again.ReceiptBody)
	require.Equal(t, lost.Ack, again.Ack)
	require.Equal(t, committed, state(t, s))
}

// reorderingConverges: every chain delivered in reverse order (retryable
// waits allowed, nothing non-retryable) converges to the state of in-order
// delivery (OPS-2 for the projector).
func reorderingConverges(t *testing.T, newSubject Factory) {
	inOrder := newSubject(t)
	for _, chain := range inOrder.Chains {
		for _, e := range chain {
			mustAck(t, inOrder, e)
		}
	}
	want := state(t, inOrder)

	reversed := newSubject(t)
	var all []*envelope.Envelope
	for i := len(reversed.Chains) - 1; i >= 0; i-- {
		chain := reversed.Chains[i]
		for j := len(chain) - 1; j >= 0; j-- {
			all = append(all, chain[j])
		}
	}
	deliverUntilAcked(t, reversed, all)
	require.Equal(t, want, state(t, reversed), "reverse-order delivery must converge to the in-order state")
}

// sameEventIDOtherDigestIsNonRetryable: the same event id with another
// envelope digest is non_retryable and writes nothing (CON-1).
func sameEventIDOtherDigestIsNonRetryable(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	e := s.Chains[0][0]
	mustAck(t, s, e)
	before := state(t, s)
	other := *e
	other.OccurredAt = e.OccurredAt.Add(time.Second)
	changed, err := envelope.Build(other)
	require.NoError(t, err)
	_, err = s.Consume(context.Background(), Delivery(s, changed))
	requireNonRetryable(t, err)
	require.Equal(t, before, state(t, s))
}

// envelopeDigestMismatchIsNonRetryable: a carried envelope digest that does
// not recompute is non_retryable and writes nothing.
func envelopeDigestMismatchIsNonRetryable(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	before := state(t, s)
	d := Delivery(s, s.Chains[0][0])
	d.EnvelopeDigest.Value = fmt.Sprintf("%064x", 1)
	_, err := s.Consume(context.Background(), d)
	requireNonRetryable(t, err)
	require.Equal(t, before, state(t, s))
}

// malformedEnvelopeIsNonRetryable: an envelope with an unknown field (digest
// recomputed) is non_retryable and writes nothing.
func malformedEnvelopeIsNonRetryable(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	before := state(t, s)
	d := Delivery(s, s.Chains[0][0])
	d.Envelope = append(bytes.TrimSuffix(d.Envelope, []byte("}")), []byte(`,"unknownField":1}`)...)
	dg, err := digest.OfJSON(digest.JCSSHA256V1, d.Envelope)
	require.NoError(t, err)
	d.EnvelopeDigest = dg
	_, err = s.Consume(context.Background(), d)
	requireNonRetryable(t, err)
	require.Equal(t, before, state(t, s))
}

// unknownPairIsNonRetryable: an alias of the exact event pair is
// non_retryable and writes nothing (CON-3).
func unknownPairIsNonRetryable(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	before := state(t, s)
	e := s.Chains[0][0]
	// An alias of the exact pair: same family, no "@<version>" match.
	for _, alias := range []struct{ eventType, schemaVersion string }{
		{e.EventType + ".1", e.EventSchemaVersion + ".1"},
		{trimVersion(e.EventType) + "@latest", "latest"},
	} {
		m := e.ToJSON()
		m["eventType"], m["eventSchemaVersion"] = alias.eventType, alias.schemaVersion
		raw, err := jcs.Marshal(m)
		require.NoError(t, err)
		dg, err := digest.OfCanonical(digest.JCSSHA256V1, raw)
		require.NoError(t, err)
		member := s.Member(e.EventType, e.EventSchemaVersion)
		member.EventType, member.EventSchemaVersion = alias.eventType, alias.schemaVersion
		_, err = s.Consume(context.Background(), transport.Delivery{
			EventID: e.EventID, EventType: alias.eventType, EventSchemaVersion: alias.schemaVersion,
			Envelope: raw, EnvelopeDigest: dg, Member: member, AttemptID: uuid.NewString(), AttemptNumber: 1,
		})
		requireNonRetryable(t, err)
	}
	require.Equal(t, before, state(t, s))
}

// retryableWritesNothing: a temporary failure is retryable and writes
// nothing; the delivery then succeeds (CON-2).
func retryableWritesNothing(t *testing.T, newSubject Factory) {
	s := newSubject(t)
	e := s.Chains[0][0]
	before := state(t, s)
	unblock := s.Block(t)
	_, err := s.Consume(context.Background(), Delivery(s, e))
	require.Error(t, err)
	retryable, code := transport.RetryableAndCode(err)
	require.True(t, retryable, "temporary failure must be retryable, got %s: %v", code, err)
	unblock()
	require.Equal(t, before, state(t, s), "a retryable failure must write nothing")
	mustAck(t, s, e)
}

// Delivery builds the delivery of e as a dispatcher hands it over: the
// canonical envelope, its digest, the frozen member and a fresh attempt.
func Delivery(s Subject, e *envelope.Envelope) transport.Delivery {
	canonical, err := e.Canonical()
	if err != nil {
		panic(err)
	}
	dg, err := e.Digest()
	if err != nil {
		panic(err)
	}
	return transport.Delivery{
		EventID: e.EventID, EventType: e.EventType, EventSchemaVersion: e.EventSchemaVersion,
		Envelope: canonical, EnvelopeDigest: dg, Member: s.Member(e.EventType, e.EventSchemaVersion),
		AttemptID: uuid.NewString(), AttemptNumber: 1,
	}
}

func mustAck(t *testing.T, s Subject, e *envelope.Envelope) transport.Result {
	t.Helper()
	res, err := s.Consume(context.Background(), Delivery(s, e))
	require.NoError(t, err, "deliver %s %s", e.EventType, e.EventID)
	require.NotNil(t, res.Ack)
	require.NotEmpty(t, res.ReceiptBody)
	require.Equal(t, e.EventID, res.Ack.EventID)
	return res
}

// deliverUntilAcked redelivers every unacknowledged event, in the given
// order, until all are acknowledged. Retryable errors are allowed (a
// recoverable wait); a non-retryable one fails the test. Rounds are bounded.
func deliverUntilAcked(t *testing.T, s Subject, events []*envelope.Envelope) {
	t.Helper()
	done := make([]bool, len(events))
	for round := 0; round <= len(events); round++ {
		remaining := 0
		for i, e := range events {
			if done[i] {
				continue
			}
			_, err := s.Consume(context.Background(), Delivery(s, e))
			if err == nil {
				done[i] = true
				continue
			}
			retryable, code := transport.RetryableAndCode(err)
			require.True(t, retryable, "event %s %s: non-retryable %s: %v", e.EventType, e.EventID, code, err)
			remaining++
		}
		if remaining == 0 {
			return
		}
	}
	t.Fatalf("events not acknowledged after %d rounds", len(events)+1)
}

func requireNonRetryable(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	retryable, code := transport.RetryableAndCode(err)
	require.False(t, retryable, "want non_retryable, got retryable %s: %v", code, err)
}

func state(t *testing.T, s Subject) string {
	t.Helper()
	st, err := s.State(context.Background())
	require.NoError(t, err)
	return st
}

func trimVersion(eventType string) string {
	for i := len(eventType) - 1; i >= 0; i-- {
		if eventType[i] == '@' {
			return eventType[:i]
		}
	}
	return eventType
}
