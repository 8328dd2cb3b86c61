package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/codec"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

func testKeys(t *testing.T, text string) *codec.Keys {
	t.Helper()
	k, err := codec.ParseKeys(text)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func key(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, codec.KeySize))
}

// rawHistory is the delegation's history as the server stores it (every
// run of it), as protobuf bytes: nothing decoded.
func rawHistory(t *testing.T, ctx context.Context, c client.Client, id string) ([]byte, *historypb.History) {
	t.Helper()
	hist := &historypb.History{}
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	b, err := proto.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	return b, hist
}

// clearText fails for every secret found in the stored history, in any
// of the encodings a payload could carry it (raw, JSON-escaped, base64).
func clearText(t *testing.T, raw []byte, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, form := range []string{s, strings.ReplaceAll(s, `"`, `\"`), base64.StdEncoding.EncodeToString([]byte(s))} {
			if bytes.Contains(raw, []byte(form)) {
				t.Errorf("the stored history holds %q in clear", s)
				break
			}
		}
	}
}

// With encryption keys, the server's history of a whole delegation (the
// message, the question, the answer, the artifact, a cancel reason) holds
// ciphertext only; the client still reads the state and the outcome.
func TestEncryptedHistoryHasNoPlaintext(t *testing.T) {
	keys := testKeys(t, "k1:"+key(1))
	e := setup(t, func(o *options) { o.keys = keys })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("sealed-1", e.base)
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
	s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
	if err != nil || s.Question == nil || s.Question.Text != claimsagent.Question {
		t.Fatalf("state through the codec: question %+v, %v", s.Question, err)
	}
	answer := "photo of the box: IMG-7731.jpg"
	if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: answer, AnsweredBy: "sealed-ops"}); err != nil {
		t.Fatal(err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	claimID := string(out.Outputs[0].Data)
	raw, _ := rawHistory(t, ctx, e.c, d.LocalWorkflowID)
	clearText(t, raw, "never arrived", claimsagent.Question, "IMG-7731", "sealed-ops", claimID, `"claim_opened"`)
	if !bytes.Contains(raw, []byte(codec.MetadataEncoding)) {
		t.Error("no sealed payload in the history")
	}

	// A cancel reason is sealed too.
	slow := lostParcel("sealed-2", e.base)
	slow.Message.Data = []byte(`{"order_id":"A-1001","scenario":"slow"}`)
	run, err = startRun(ctx, e.c, slow)
	if err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, e.c, slow.LocalWorkflowID, "working")
	if err := dclient.Get(e.c, slow.LocalWorkflowID).WithNamespace(e.srv.Namespace()).Cancel(ctx, "customer-secret-reason-42"); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, &out); err != nil || !strings.Contains(out.Error.Message, "customer-secret-reason-42") {
		t.Fatalf("canceled outcome = %+v, %v", out, err)
	}
	raw, _ = rawHistory(t, ctx, e.c, slow.LocalWorkflowID)
	clearText(t, raw, "never arrived", "customer-secret-reason-42")
}

// Rotation: a delegation started under key k1 waits; the worker and the
// client restart with k1 and a new key k2 (the last, so it encrypts); the
// answer is sealed with k2, the old payloads still open, the delegation
// completes. A client without k1 cannot read the state and says which
// key it lacks.
func TestEncryptionKeyRotation(t *testing.T) {
	e := setup(t, func(o *options) { o.noWorker = true })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1 := e.dialKeys(t, testKeys(t, "k1:"+key(1)))
	w1 := e.ownWorker(t, c1)
	d := lostParcel("rotated-1", e.base)
	if _, err := dclient.Start(ctx, c1, d); err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, c1, d.LocalWorkflowID, "input-required")
	w1.Stop()

	c2 := e.dialKeys(t, testKeys(t, "k1:"+key(1)+"\nk2:"+key(2)))
	w2 := e.ownWorker(t, c2)
	defer w2.Stop()
	h := dclient.Get(c2, d.LocalWorkflowID)
	if _, err := h.Answer(ctx, contracts.Answer{Text: "photo", AnsweredBy: "rotation"}); err != nil {
		t.Fatal(err)
	}
	out, err := h.Outcome(ctx)
	if err != nil || out.Status != contracts.StatusCompleted {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	_, hist := rawHistory(t, ctx, c2, d.LocalWorkflowID)
	ids := map[string]int{}
	for _, ev := range hist.Events {
		for _, p := range payloadsOf(ev) {
			id := string(p.GetMetadata()[codec.MetadataKeyID])
			ids[id]++
			if id == "" {
				t.Errorf("clear payload in %s: %s %q", ev.GetEventType(), p.GetMetadata()["encoding"], p.GetData())
			}
		}
	}
	if ids["k1"] == 0 || ids["k2"] == 0 {
		t.Errorf("payloads by key id = %v, want both k1 and k2", ids)
	}
	// Without k1, what k1 sealed (the contract, at start) does not open,
	// and the error names the key.
	start := hist.Events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if _, err := testKeys(t, "k2:"+key(2)).Codec().Decode(start); err == nil || !strings.Contains(err.Error(), `key "k1"`) {
		t.Errorf("opening the start input without k1: %v, want an error naming k1", err)
	}
}

// A revoke sealed with a key the worker lacks (a client a step ahead in a
// rotation) still revokes, on a real server and worker, and is recorded
// naming the key. The SDK used to drop it: the delegation went on waiting,
// and `delegate revoke` said only "still stopping".
func TestRevokeSealedWithAnotherKey(t *testing.T) {
	e := setup(t, func(o *options) { o.noWorker = true })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c1 := e.dialKeys(t, testKeys(t, "k1:"+key(1)))
	w := e.ownWorker(t, c1)
	defer w.Stop()
	d := lostParcel("sealed-revoke", e.base)
	if _, err := dclient.Start(ctx, c1, d); err != nil {
		t.Fatal(err)
	}
	waitA2AState(t, ctx, c1, d.LocalWorkflowID, "input-required")
	c2 := e.dialKeys(t, testKeys(t, "k2:"+key(2)))
	if err := dclient.Get(c2, d.LocalWorkflowID).Revoke(ctx, "rotated client"); err != nil {
		t.Fatal(err)
	}
	h := dclient.Get(c1, d.LocalWorkflowID)
	out, err := h.Outcome(ctx)
	if err != nil || out.Status != contracts.StatusAuthorizationDenied {
		t.Fatalf("outcome = %+v, %v; want authorization_denied", out, err)
	}
	st := stateOf(t, ctx, c1, d.LocalWorkflowID)
	if len(st.IgnoredSignals) != 1 || !strings.Contains(st.IgnoredSignals[0].Reason, `sealed with key "k2"`) {
		t.Errorf("ignored signals = %+v, want the revoke's payload refused naming k2", st.IgnoredSignals)
	}
}

// payloadsOf collects every Payload inside a history event but those of
// search attributes (which the server indexes, so never encoded: they are
// listed as clear in docs/trust.md).
func payloadsOf(m proto.Message) []*commonpb.Payload {
	var out []*commonpb.Payload
	var walk func(protoreflect.Message)
	walk = func(r protoreflect.Message) {
		switch p := r.Interface().(type) {
		case *commonpb.Payload:
			out = append(out, p)
			return
		case *commonpb.SearchAttributes:
			return
		}
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := 0; i < v.List().Len(); i++ {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message())
					return true
				})
			case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
				walk(v.Message())
			}
			return true
		})
	}
	walk(m.ProtoReflect())
	return out
}
