package httptransport

import (
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/oceanway/core/contracts/digest"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/outbox/transport"
)

// PathPrefix is the path of the delivery endpoint; the destination follows.
const PathPrefix = "/v1/deliveries/"

// Scope is the workload-token scope of a delivery to dest.
func Scope(dest route.Destination) string { return "outbox.deliver:" + string(dest) }

// Audience is the workload-token audience of a delivery to dest: exactly the
// destination's one consumer.
func Audience(dest route.Destination) (string, error) {
	b, err := route.BindingOf(dest)
	if err != nil {
		return "", err
	}
	return b.ConsumerName, nil
}

// Outcomes of a delivery answer.
const (
	OutcomeAcknowledged = "acknowledged"
	OutcomeRetryable    = "retryable"
	OutcomeWait         = "wait"
	OutcomeNonRetryable = "non_retryable"
)

type wireTarget struct {
	State             string `json:"state"`
	ProjectionName    string `json:"projectionName,omitempty"`
	ProjectionVersion int64  `json:"projectionVersion,omitempty"`
}

type wireMember struct {
	EventType                    string     `json:"eventType"`
	EventSchemaVersion           string     `json:"eventSchemaVersion"`
	Destination                  string     `json:"destination"`
	ConsumerName                 string     `json:"consumerName"`
	ExpectedReceiptType          string     `json:"expectedReceiptType"`
	ExpectedReceiptSchemaVersion string     `json:"expectedReceiptSchemaVersion"`
	ProjectionTarget             wireTarget `json:"projectionTarget"`
	Mandatory                    bool       `json:"mandatory"`
}

type wireRequest struct {
	EventID            string     `json:"eventId"`
	EventType          string     `json:"eventType"`
	EventSchemaVersion string     `json:"eventSchemaVersion"`
	Envelope           []byte     `json:"envelope"` // base64: the exact stored bytes
	EnvelopeDigest     string     `json:"envelopeDigest"`
	Member             wireMember `json:"member"`
	AttemptID          string     `json:"attemptId"`
	AttemptNumber      int        `json:"attemptNumber"`
}

type wireResponse struct {
	Outcome     string          `json:"outcome"`
	Ack         json.RawMessage `json:"ack,omitempty"`
	ReceiptBody []byte          `json:"receiptBody,omitempty"` // base64: the exact bytes
	Code        string          `json:"code,omitempty"`
	Message     string          `json:"message,omitempty"`
}

func requestOf(d transport.Delivery) wireRequest {
	m := d.Member
	t := wireTarget{State: "not_applicable"}
	if m.ProjectionTarget.Required {
		t = wireTarget{State: "required", ProjectionName: m.ProjectionTarget.Name, ProjectionVersion: m.ProjectionTarget.Version}
	}
	return wireRequest{
		EventID: d.EventID, EventType: d.EventType, EventSchemaVersion: d.EventSchemaVersion,
		Envelope: d.Envelope, EnvelopeDigest: d.EnvelopeDigest.String(),
		Member: wireMember{
			EventType: m.EventType, EventSchemaVersion: m.EventSchemaVersion, Destination: string(m.Destination),
			ConsumerName: m.ConsumerName, ExpectedReceiptType: m.ExpectedReceiptType,
			ExpectedReceiptSchemaVersion: m.ExpectedReceiptSchemaVersion, ProjectionTarget: t, Mandatory: m.Mandatory,
		},
		AttemptID: d.AttemptID, AttemptNumber: d.AttemptNumber,
	}
}

// delivery decodes a request; the destination must be the endpoint's.
func (w wireRequest) delivery(dest route.Destination) (transport.Delivery, error) {
	dg, err := digest.Parse(w.EnvelopeDigest)
	if err != nil {
		return transport.Delivery{}, fmt.Errorf("envelope digest: %w", err)
	}
	md, err := route.ParseDestination(w.Member.Destination)
	if err != nil {
		return transport.Delivery{}, err
	}
	if md != dest {
		return transport.Delivery{}, fmt.Errorf("member destination %s sent to the %s endpoint", md, dest)
	}
	var t route.ProjectionTarget
	switch w.Member.ProjectionTarget.State {
	case "required":
		t = route.Required(w.Member.ProjectionTarget.ProjectionName, w.Member.ProjectionTarget.ProjectionVersion)
	case "not_applicable":
	default:
		return transport.Delivery{}, fmt.Errorf("projection target state %q", w.Member.ProjectionTarget.State)
	}
	if w.EventID == "" || len(w.Envelope) == 0 || w.AttemptID == "" {
		return transport.Delivery{}, fmt.Errorf("eventId, envelope and attemptId are required")
	}
	return transport.Delivery{
		EventID: w.EventID, EventType: w.EventType, EventSchemaVersion: w.EventSchemaVersion,
		Envelope: w.Envelope, EnvelopeDigest: dg,
		Member: route.Member{
			EventType: w.Member.EventType, EventSchemaVersion: w.Member.EventSchemaVersion, Destination: md,
			ConsumerName: w.Member.ConsumerName, ExpectedReceiptType: w.Member.ExpectedReceiptType,
			ExpectedReceiptSchemaVersion: w.Member.ExpectedReceiptSchemaVersion, ProjectionTarget: t, Mandatory: w.Member.Mandatory,
		},
		AttemptID: w.AttemptID, AttemptNumber: w.AttemptNumber,
	}, nil
}

// codePattern is what a normalized error code looks like; anything else from
// the wire is replaced so that no free text becomes a metric label.
var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func normalizeCode(code string) string {
	if codePattern.MatchString(code) {
		return code
	}
	return "consumer_error"
}
