package wire

import (
	"fmt"
	"slices"
)

// Kinds 27 and 28, added after version 1 was frozen: a client hands the
// relay several envelopes in one message (SubmitBatch) and the relay answers
// once, with one result per envelope in the same order (BatchResults). A
// relay that serves them announces FeatureSubmitBatch in Features; a client
// that does not see it submits one envelope per Submit, as before.
//
// Layout (docs/wire-format.md): SubmitBatch is a u8 count (1 to
// MaxSubmitBatchEnvelopes) and that many envelopes, each a u32 length (1 to
// MaxEnvelopeSize) and its bytes, the lengths summing to at most
// MaxSubmitBatchBytes. BatchResults is a u8 count (1 to
// MaxSubmitBatchEnvelopes) and that many results, each an envelope ID (16
// bytes) and an outcome byte: 0 accepted, 1 to 9 refused with that
// RefuseReason, 255 failed (what Error{internal} says of a single Submit).

// Batch relay kinds.
const (
	RelaySubmitBatch  RelayKind = 27 // client → server
	RelayBatchResults RelayKind = 28 // server → client
)

const (
	// FeatureSubmitBatch: the relay serves SubmitBatch.
	FeatureSubmitBatch FeatureSet = 1 << 4

	// MaxSubmitBatchEnvelopes is the most envelopes one SubmitBatch
	// carries: enough for a burst of a conversation's messages and their
	// acknowledgements, few enough that a relay keeps a batch's checks and
	// appends (one token and a quota check each) in one short step.
	MaxSubmitBatchEnvelopes = 64
	// MaxSubmitBatchBytes bounds the sum of a SubmitBatch's envelope
	// lengths, so that a batch within both limits fits MaxRelayMessageSize,
	// the relay's websocket read limit, whatever its count: a batch the
	// relay would have to cut the connection for cannot be encoded. An
	// envelope too large for it goes alone in a Submit.
	MaxSubmitBatchBytes = MaxRelayMessageSize - relayHeaderSize - 1 - 4*MaxSubmitBatchEnvelopes

	batchResultSize = 16 + 1
)

// Every batch within the limits, and its answer, fit the read limit.
var _ [MaxRelayMessageSize - (relayHeaderSize + 1 + MaxSubmitBatchEnvelopes*batchResultSize)]struct{}

// SubmitBatch hands the relay several encoded envelopes at once; each is
// checked and stored as if it came alone in a Submit, in order.
type SubmitBatch struct {
	Envelopes [][]byte
}

// BatchResults answers a SubmitBatch, or consecutive Submits a relay
// answered together, with one result per envelope in the order submitted.
type BatchResults struct {
	Results []SubmitResult
}

// SubmitResult is what became of one envelope of a SubmitBatch.
type SubmitResult struct {
	EnvelopeID EnvelopeID
	Outcome    SubmitOutcome
}

// SubmitOutcome is a SubmitResult's outcome byte: SubmitAccepted,
// SubmitFailed, or a refusal (Refusal).
type SubmitOutcome uint8

const (
	// SubmitAccepted: the envelope is stored (Accepted).
	SubmitAccepted SubmitOutcome = 0
	// SubmitFailed: the relay could not store the envelope for a reason
	// of its own (a single Submit gets Error{internal}); trying again
	// later may succeed.
	SubmitFailed SubmitOutcome = 255
)

// Refusal returns the outcome of an envelope refused for r.
func Refusal(r RefuseReason) SubmitOutcome { return SubmitOutcome(r) }

// Refused returns the reason of a refused envelope, and false for any
// other outcome.
func (o SubmitOutcome) Refused() (RefuseReason, bool) {
	r := RefuseReason(o)
	return r, r.valid()
}

// String returns "accepted", "failed" or the refusal reason.
func (o SubmitOutcome) String() string {
	switch o {
	case SubmitAccepted:
		return "accepted"
	case SubmitFailed:
		return "failed"
	}
	if r, ok := o.Refused(); ok {
		return "refused: " + r.String()
	}
	return fmt.Sprintf("submit outcome %d", uint8(o))
}

func (o SubmitOutcome) valid() bool {
	_, refused := o.Refused()
	return o == SubmitAccepted || o == SubmitFailed || refused
}

// RelayKind implements RelayMessage.
func (SubmitBatch) RelayKind() RelayKind { return RelaySubmitBatch }

// RelayKind implements RelayMessage.
func (BatchResults) RelayKind() RelayKind { return RelayBatchResults }

func (SubmitBatch) isRelayMessage()  {}
func (BatchResults) isRelayMessage() {}

func appendSubmitBatch(b []byte, m SubmitBatch) ([]byte, error) {
	n := len(m.Envelopes)
	if n == 0 {
		return nil, fmt.Errorf("no envelopes: %w", ErrMalformed)
	}
	if n > MaxSubmitBatchEnvelopes {
		return nil, fmt.Errorf("%d envelopes over %d: %w", n, MaxSubmitBatchEnvelopes, ErrMessageTooLarge)
	}
	sum := 0
	for _, env := range m.Envelopes {
		sum += len(env)
	}
	if sum > MaxSubmitBatchBytes {
		return nil, fmt.Errorf("envelopes of %d bytes in all over %d: %w", sum, MaxSubmitBatchBytes, ErrMessageTooLarge)
	}
	b = slices.Grow(b, 1+4*n+sum)
	b = append(b, byte(n))
	for i, env := range m.Envelopes {
		var err error
		if b, err = appendEnvelope(b, env); err != nil {
			return nil, fmt.Errorf("envelope %d: %w", i, err)
		}
	}
	return b, nil
}

func appendBatchResults(b []byte, m BatchResults) ([]byte, error) {
	n := len(m.Results)
	if n == 0 {
		return nil, fmt.Errorf("no results: %w", ErrMalformed)
	}
	if n > MaxSubmitBatchEnvelopes {
		return nil, fmt.Errorf("%d results over %d: %w", n, MaxSubmitBatchEnvelopes, ErrMessageTooLarge)
	}
	b = slices.Grow(b, 1+n*batchResultSize)
	b = append(b, byte(n))
	for i, r := range m.Results {
		if !r.Outcome.valid() {
			return nil, fmt.Errorf("result %d: unknown outcome %d: %w", i, r.Outcome, ErrMalformed)
		}
		b = append(b, r.EnvelopeID[:]...)
		b = append(b, byte(r.Outcome))
	}
	return b, nil
}

// batchCount reads the u8 count of a batch kind and checks its range.
func (r *reader) batchCount(field string) int {
	n := int(r.u8(field))
	if r.err == nil && (n < 1 || n > MaxSubmitBatchEnvelopes) {
		r.fail(fmt.Errorf("%s %d outside 1..%d: %w", field, n, MaxSubmitBatchEnvelopes, ErrMalformed))
	}
	return n
}

func (r *reader) submitBatch() RelayMessage {
	n := r.batchCount("envelope count")
	if r.err != nil {
		return nil
	}
	m := SubmitBatch{Envelopes: make([][]byte, 0, n)}
	sum := 0
	for i := 0; i < n && r.err == nil; i++ {
		env := r.sized(fmt.Sprintf("envelope %d", i), 1, MaxEnvelopeSize)
		if sum += len(env); r.err == nil && sum > MaxSubmitBatchBytes {
			r.fail(fmt.Errorf("envelopes of over %d bytes in all: %w", MaxSubmitBatchBytes, ErrMalformed))
		}
		m.Envelopes = append(m.Envelopes, slices.Clone(env))
	}
	return ok(r, m)
}

func (r *reader) batchResults() RelayMessage {
	n := r.batchCount("result count")
	p := r.take(n*batchResultSize, "results")
	if r.err != nil {
		return nil
	}
	m := BatchResults{Results: make([]SubmitResult, n)}
	for i := range m.Results {
		q := p[i*batchResultSize:]
		copy(m.Results[i].EnvelopeID[:], q)
		m.Results[i].Outcome = SubmitOutcome(q[16])
		if !m.Results[i].Outcome.valid() {
			r.fail(fmt.Errorf("result %d: unknown outcome %d: %w", i, q[16], ErrMalformed))
			return nil
		}
	}
	return ok(r, m)
}
