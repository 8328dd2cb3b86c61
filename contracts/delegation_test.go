package contracts

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const valid = `{
  "local_workflow_id": "lost-parcel-1",
  "agent_card_url": "http://127.0.0.1:9999/.well-known/agent-card.json",
  "skill": "open-claim",
  "purpose": "open a claim",
  "message": {"text": "lost parcel", "data": {"order_id": "A-1001"}},
  "allowed_outputs": ["claim_opened", "claim_note"],
  "deadline": "2027-01-01T00:00:00Z",
  "write_authority": "none"
}`

// with returns valid with field set to raw JSON (or removed when raw is "").
func with(t *testing.T, field, raw string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(valid), &m); err != nil {
		t.Fatal(err)
	}
	if raw == "" {
		delete(m, field)
	} else {
		m[field] = json.RawMessage(raw)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeDelegationValid(t *testing.T) {
	d, err := DecodeDelegation([]byte(valid), now)
	if err != nil {
		t.Fatalf("DecodeDelegation() error = %v", err)
	}
	if d.LocalWorkflowID != "lost-parcel-1" || d.Skill != "open-claim" || len(d.AllowedOutputs) != 2 {
		t.Errorf("decoded %+v", d)
	}
	if !d.Deadline.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("deadline = %v", d.Deadline)
	}
	if string(d.Message.Data) != `{"order_id": "A-1001"}` && !json.Valid(d.Message.Data) {
		t.Errorf("message.data = %s", d.Message.Data)
	}
}

func TestDecodeDelegationRules(t *testing.T) {
	tests := []struct {
		name      string
		doc       []byte
		wantField string
		wantRule  string
	}{
		{"unknown field", with(t, "priority", `"high"`), "priority", "unknown field"},
		{"unknown nested field", with(t, "message", `{"text":"x","html":"<b>"}`), "message.html", "unknown field"},
		{"field name in another case", with(t, "SKILL", `"refund-money"`), "SKILL", "case-sensitive"},
		{"field given twice", []byte(strings.Replace(valid, `"skill": "open-claim",`, `"skill": "open-claim", "skill": "refund",`, 1)), "skill", "given twice"},
		{"credentials in the card URL", with(t, "agent_card_url", `"http://alice:pw@127.0.0.1:9999/"`), "agent_card_url", "credentials"},
		{"card URL without host", with(t, "agent_card_url", `"http://"`), "agent_card_url", "no host"},
		{"card URL with a bad port", with(t, "agent_card_url", `"http://127.0.0.1:99999/"`), "agent_card_url", "port"},
		{"card URL too long", with(t, "agent_card_url", `"http://a/`+strings.Repeat("a", 3000)+`"`), "agent_card_url", "2048"},
		{"deadline too far", with(t, "deadline", `"2319-06-01T00:00:00Z"`), "deadline", "366 days"},
		{"purpose too long", with(t, "purpose", `"`+strings.Repeat("p", 1001)+`"`), "purpose", "1000"},
		{"contract too large", with(t, "purpose", `"`+strings.Repeat("p", 300<<10)+`"`), "(document)", "limit"},
		{"null document", []byte(`null`), "(document)", "JSON object"},
		{"wrong type skill", with(t, "skill", `42`), "skill", "wrong type"},
		{"wrong type allowed_outputs", with(t, "allowed_outputs", `"claim_opened"`), "allowed_outputs", "wrong type"},
		{"wrong type message.text", with(t, "message", `{"text": 1}`), "message.text", "wrong type"},
		{"wrong type deadline", with(t, "deadline", `1767225600`), "deadline", "wrong type"},
		{"missing local_workflow_id", with(t, "local_workflow_id", ""), "local_workflow_id", "required"},
		{"missing agent_card_url", with(t, "agent_card_url", ""), "agent_card_url", "required"},
		{"missing skill", with(t, "skill", ""), "skill", "required"},
		{"missing purpose", with(t, "purpose", ""), "purpose", "required"},
		{"missing message", with(t, "message", ""), "message", "required"},
		{"missing allowed_outputs", with(t, "allowed_outputs", ""), "allowed_outputs", "required"},
		{"missing deadline", with(t, "deadline", ""), "deadline", "required"},
		{"missing write_authority", with(t, "write_authority", ""), "write_authority", "required"},
		{"empty message", with(t, "message", `{"text": "  "}`), "message", "needs text or data"},
		{"null message data", with(t, "message", `{"text": "x", "data": null}`), "message.data", "must not be null"},
		// a2a-go echoes a data part holding [] without its data: the task
		// then could not be read (protocol_error after the send).
		{"empty list message data", with(t, "message", `{"text": "x", "data": [ ]}`), "message.data", "must not be an empty list"},
		{"empty allowed_outputs", with(t, "allowed_outputs", `[]`), "allowed_outputs", "must not be empty"},
		{"duplicate allowed_outputs", with(t, "allowed_outputs", `["a","a"]`), "allowed_outputs[1]", "listed twice"},
		{"bad allowed_outputs pattern", with(t, "allowed_outputs", `["Claim-Opened"]`), "allowed_outputs[0]", "must match"},
		{"allowed_outputs too long", with(t, "allowed_outputs", `["a`+strings.Repeat("b", 64)+`"]`), "allowed_outputs[0]", "must match"},
		{"deadline in the past", with(t, "deadline", `"2020-01-01T00:00:00Z"`), "deadline", "in the future"},
		{"deadline not RFC 3339", with(t, "deadline", `"tomorrow"`), "deadline", "RFC 3339"},
		{"write_authority full", with(t, "write_authority", `"full"`), "write_authority", `only "none" is accepted`},
		{"agent_card_url not http", with(t, "agent_card_url", `"file:///etc/passwd"`), "agent_card_url", "http or https"},
		{"bad workflow id", with(t, "local_workflow_id", `"has space"`), "local_workflow_id", "must match"},
		{"not an object", []byte(`["x"]`), "(document)", "JSON object"},
		{"trailing data", []byte(valid + ` {}`), "(document)", "after top-level value"},
		{"malformed", []byte(`{"skill": `), "(document)", "malformed"},
		// Not JSON and not starting with "{": said "must be a JSON object".
		{"malformed list", []byte(`[1,2`), "(document)", "malformed JSON"},
		{"malformed literal", []byte(`nul`), "(document)", "malformed JSON"},
		{"waiting cadence past a day", with(t, "waiting_poll_seconds", `86401`), "waiting_poll_seconds", "must be 1 to 86400"},
		{"negative waiting cadence", with(t, "waiting_poll_seconds", `-1`), "waiting_poll_seconds", "must be 1 to 86400"},
		{"send timeout not a duration", with(t, "send_timeout", `"40"`), "send_timeout", "not a Go duration"},
		{"send timeout past an hour", with(t, "send_timeout", `"61m"`), "send_timeout", "must be 1s to 1h0m0s"},
		{"send timeout under a second", with(t, "send_timeout", `"500ms"`), "send_timeout", "must be 1s to 1h0m0s"},
		{"send timeout a number", with(t, "send_timeout", `40`), "send_timeout", "string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeDelegation(tt.doc, now)
			if err == nil {
				t.Fatalf("DecodeDelegation() error = nil, want %s: %s", tt.wantField, tt.wantRule)
			}
			if !errors.Is(err, ErrInvalidContract) {
				t.Errorf("error %v is not ErrInvalidContract", err)
			}
			if !hasFieldError(err, tt.wantField, tt.wantRule) {
				t.Errorf("DecodeDelegation() error = %v, want field %q with rule containing %q", err, tt.wantField, tt.wantRule)
			}
		})
	}
}

func hasFieldError(err error, field, rule string) bool {
	var fe *FieldError
	if errors.As(err, &fe) && fe.Field == field && strings.Contains(fe.Rule, rule) {
		return true
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if hasFieldError(e, field, rule) {
				return true
			}
		}
	}
	return false
}

// A waiting cadence up to a day is taken (the bound was an hour: 100,000
// delegations waiting for days were read 28 times a second).
func TestWaitingCadenceUpToADay(t *testing.T) {
	d, err := DecodeDelegation(with(t, "waiting_poll_seconds", `86400`), now)
	if err != nil {
		t.Fatal(err)
	}
	if d.WaitingPoll() != 24*time.Hour {
		t.Errorf("WaitingPoll() = %v, want 24h", d.WaitingPoll())
	}
}

// send_timeout is a Go duration from 1s to an hour; absent, the default.
func TestSendTimeout(t *testing.T) {
	d, err := DecodeDelegation(with(t, "send_timeout", `"90s"`), now)
	if err != nil {
		t.Fatal(err)
	}
	if d.SendTimeoutOf() != 90*time.Second {
		t.Errorf("SendTimeoutOf() = %v, want 90s", d.SendTimeoutOf())
	}
	if (Delegation{}).SendTimeoutOf() != DefaultSendTimeout {
		t.Errorf("no send_timeout: %v, want %v", (Delegation{}).SendTimeoutOf(), DefaultSendTimeout)
	}
}

func TestDecodeDelegationAcceptsBOMAndUpperCaseScheme(t *testing.T) {
	doc := append([]byte("\xef\xbb\xbf"), with(t, "agent_card_url", `"HTTP://127.0.0.1:9999/"`)...)
	if _, err := DecodeDelegation(doc, now); err != nil {
		t.Fatalf("DecodeDelegation() error = %v", err)
	}
}

func TestDecodeAnswer(t *testing.T) {
	tests := []struct {
		doc     string
		wantErr string
	}{
		{`{"text": "photo.jpg", "answered_by": "ops"}`, ""},
		{`{"data": {"photo": "box.jpg"}}`, ""},
		{`{"text": ""}`, "needs text or data"},
		{`{"data": ""}`, "needs text or data"},
		{`{"data": {}}`, "needs text or data"},
		{`{"text": "x", "data": null}`, "must not be null"},
		{`{"text": "x", "data": []}`, "must not be an empty list"},
		{`{"text": "x", "data": [1]}`, ""},
		{`{"text": "x", "approve": true}`, "unknown field"},
		{`{"text": 7}`, "wrong type"},
	}
	for _, tt := range tests {
		_, err := DecodeAnswer([]byte(tt.doc))
		if tt.wantErr == "" && err != nil {
			t.Errorf("DecodeAnswer(%s) error = %v", tt.doc, err)
		}
		if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("DecodeAnswer(%s) error = %v, want %q", tt.doc, err, tt.wantErr)
		}
	}
}

func TestExampleContractDecodes(t *testing.T) {
	raw, err := os.ReadFile("examples/lost-parcel.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeDelegation(raw, now); err != nil {
		t.Fatalf("examples/lost-parcel.json: %v", err)
	}
}

// An answer over MaxAnswerBytes is refused at once, naming the limit.
func TestAnswerSizeLimit(t *testing.T) {
	big := Answer{Text: strings.Repeat("a", MaxAnswerBytes+1)}
	if err := big.Validate(); err == nil || !strings.Contains(err.Error(), "65536") {
		t.Errorf("Validate(%d bytes) = %v, want an error naming 65536", len(big.Text), err)
	}
	if err := (Answer{Text: strings.Repeat("a", MaxAnswerBytes-10)}).Validate(); err != nil {
		t.Errorf("Validate(just under) = %v", err)
	}
}

// A resolution names a task only to adopt it: a task_id with abandon was
// taken and ignored (the delegation abandoned, easy to take for an adopt).
func TestResolutionTaskIDOnlyWithAdopt(t *testing.T) {
	for _, res := range []Resolution{{Action: ActionAbandon, TaskID: "t-1"}, {Action: ActionResend, TaskID: "t-1"}} {
		var fe *FieldError
		if err := res.Validate(); !errors.As(err, &fe) || fe.Field != "task_id" || fe.Rule != TaskIDOnlyWithAdopt {
			t.Errorf("%+v: %v, want task_id refused", res, err)
		}
	}
	for _, res := range []Resolution{{Action: ActionAbandon}, {Action: ActionResend}, {Action: ActionAdopt, TaskID: "t-1"}} {
		if err := res.Validate(); err != nil {
			t.Errorf("%+v: %v", res, err)
		}
	}
}
