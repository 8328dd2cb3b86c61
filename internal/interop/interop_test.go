package interop

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// requireAgent skips the test when the agent cannot run, unless
// DELEGATE_INTEROP=1 asks for the interop tests: then it fails.
func requireAgent(t *testing.T) {
	t.Helper()
	if err := Available(""); err != nil {
		if os.Getenv("DELEGATE_INTEROP") == "1" {
			t.Fatalf("DELEGATE_INTEROP=1 but the agent cannot run: %v", err)
		}
		testutil.SkipGroup(t, testutil.GroupInterop, err.Error())
	}
}

func start(t *testing.T, o Options) *Agent {
	t.Helper()
	// The context bounds the agent's life: the test ends it with Stop.
	a, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start(%+v) error = %v", o, err)
	}
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("agent stderr:\n%s", a.Stderr())
		}
	})
	return a
}

// ---------------------------------------------------------------- wire log

// wire records the HTTP exchanges of a client, bodies included (a streamed
// response body as far as it was read).
type wire struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []*exchange
}

type exchange struct {
	method, url, reqBody string
	status               int
	resp                 testutil.LockedBuffer
}

type teeBody struct {
	io.Reader
	io.Closer
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	ex := &exchange{method: r.Method, url: r.URL.String()}
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		ex.reqBody = string(b)
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	w.mu.Lock()
	w.log = append(w.log, ex)
	w.mu.Unlock()
	resp, err := w.base.RoundTrip(r)
	if resp != nil {
		ex.status = resp.StatusCode
		resp.Body = teeBody{io.TeeReader(resp.Body, &ex.resp), resp.Body}
	}
	return resp, err
}

// mark returns the number of exchanges so far; since(mark) dumps the ones
// after it.
func (w *wire) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.log)
}

func (w *wire) since(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sb strings.Builder
	for _, ex := range w.log[n:] {
		fmt.Fprintf(&sb, "> %s %s\n", ex.method, ex.url)
		if ex.reqBody != "" {
			fmt.Fprintf(&sb, "> %s\n", ex.reqBody)
		}
		fmt.Fprintf(&sb, "< HTTP %d\n< %s\n", ex.status, strings.TrimSpace(ex.resp.String()))
	}
	return sb.String()
}

// ---------------------------------------------------------------- helpers

type target struct {
	name    string
	sdk     string
	binding string
	version a2a.ProtocolVersion
	// skip names a known mismatch between a2a-go v2.4.0 and the a2a-js
	// server for this target; the subtest is skipped with it.
	skip string
	// errSkip names a mismatch in error responses only (TestErrors).
	errSkip string
}

var targets = []target{
	{name: "sdk1-jsonrpc", sdk: SDK1, binding: BindingJSONRPC, version: a2a.Version},
	{name: "sdk1-rest", sdk: SDK1, binding: BindingREST, version: a2a.Version, errSkip: mismatch1RESTErrors},
	{name: "sdk03-jsonrpc", sdk: SDK03, binding: BindingJSONRPC, version: a2av0.Version},
	{name: "sdk03-rest", sdk: SDK03, binding: BindingREST, version: a2av0.Version, skip: mismatch03REST},
}

// mismatch1RESTErrors: a2a-js 1.3.0 answers REST errors as A2A 1.0 §11.6
// shows, with Content-Type "application/a2a+json"; a2a-go v2.4.0
// (internal/rest FromRESTError) decodes an error body only when the
// Content-Type starts with "application/json" and otherwise returns
// a2a.ErrServerError, so every REST error comes back as "server error".
const mismatch1RESTErrors = "a2a-go v2.4.0 REST client vs a2a-js 1.3.0 REST errors: the server sends e.g. HTTP 404 " +
	"Content-Type: application/a2a+json {\"error\":{\"code\":404,\"status\":\"NOT_FOUND\",\"message\":\"Task not found: ...\"," +
	"\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"TASK_NOT_FOUND\",\"domain\":\"a2a-protocol.org\"}]}} " +
	"(A2A 1.0 §11.6); the client decodes error bodies only for Content-Type application/json and returns a2a.ErrServerError " +
	"(\"server error\") instead of ErrTaskNotFound / ErrTaskNotCancelable / ErrUnsupportedOperation"

// mismatch03REST: a2a-go v2.4.0's 0.3 REST client (a2acompat/a2av0, which
// since a2a-go#371 speaks the A2A 0.3 §3.2.3 paths and proto JSON bodies)
// and the a2a-js 0.3.14 REST server still do not understand each other on
// one point: the client takes only HTTP 200 and 204 as success, the server
// answers a send with 201 and a cancel with 202. delegate's wire seam
// (a2aclient wireTransport) reads those as 200; e2e's js03-rest-only peer
// runs every scenario through it.
const mismatch03REST = "a2a-go v2.4.0 a2av0 REST client vs a2a-js 0.3.14 REST server: the client accepts only HTTP 200 and 204, " +
	"the server answers message:send with 201 and tasks/{id}:cancel with 202 (the body, {\"task\":{...}} in proto JSON, is what the client reads)"

var bindingNames = map[string]string{BindingJSONRPC: "JSONRPC", BindingREST: "HTTP+JSON"}

func fetchCard(t *testing.T, ctx context.Context, a *Agent) (map[string]any, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.CardURL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET card: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET card: HTTP %d, %v: %s", resp.StatusCode, err, body)
	}
	var card map[string]any
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatalf("card is not JSON: %v: %s", err, body)
	}
	return card, body
}

// interfaceURL finds the URL of binding in the card: supportedInterfaces
// for a 1.0 card, additionalInterfaces for a 0.3 one.
func interfaceURL(t *testing.T, card map[string]any, binding string) string {
	t.Helper()
	want := bindingNames[binding]
	for _, key := range []string{"supportedInterfaces", "additionalInterfaces"} {
		list, _ := card[key].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if m["protocolBinding"] == want || m["transport"] == want {
				if u, _ := m["url"].(string); u != "" {
					return u
				}
			}
		}
	}
	t.Fatalf("card has no %s interface: %v", want, card)
	return ""
}

func dial(t *testing.T, ctx context.Context, url string, tg target, w *wire) *sdk.Client {
	t.Helper()
	hc := &http.Client{Transport: w}
	c, err := sdk.NewFactory(
		sdk.WithDefaultsDisabled(),
		sdk.WithJSONRPCTransport(hc),
		sdk.WithRESTTransport(hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}),
		sdk.WithConfig(sdk.Config{DisableTenantPropagation: true}),
	).CreateFromEndpoints(ctx, []*a2a.AgentInterface{{
		URL: url, ProtocolBinding: a2a.TransportProtocol(bindingNames[tg.binding]), ProtocolVersion: tg.version,
	}})
	if err != nil {
		t.Fatalf("CreateFromEndpoints(%s) error = %v", url, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// session is one target's agent and client, shared by its subtests (which
// run one at a time and reset the counters first).
type session struct {
	tg    target
	agent *Agent
	c     *sdk.Client
	w     *wire
	gets  int // GetTask calls made by the current subtest
}

func newSession(t *testing.T, tg target) *session {
	t.Helper()
	a := start(t, Options{SDK: tg.sdk, Bindings: []string{tg.binding}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	card, _ := fetchCard(t, ctx, a)
	w := &wire{base: &http.Transport{Proxy: nil}}
	return &session{tg: tg, agent: a, w: w, c: dial(t, ctx, interfaceURL(t, card, tg.binding), tg, w)}
}

// begin resets the counters and returns a context for one subtest; on
// failure the subtest's wire exchanges are logged.
func (s *session) begin(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if err := s.agent.ResetCounts(ctx); err != nil {
		t.Fatal(err)
	}
	s.gets = 0
	m := s.w.mark()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire:\n%s", s.w.since(m))
		}
	})
	return ctx
}

func firstMessage(data map[string]any) *a2a.Message {
	return &a2a.Message{ID: uuid.NewString(), Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{
		a2a.NewTextPart("My parcel never arrived."), a2a.NewDataPart(data),
	}}
}

func followUp(task *a2a.Task) *a2a.Message {
	return &a2a.Message{ID: uuid.NewString(), Role: a2a.MessageRoleUser, TaskID: task.ID, ContextID: task.ContextID,
		Parts: a2a.ContentParts{a2a.NewTextPart("Here is the photo of the box.")}}
}

func (s *session) send(t *testing.T, ctx context.Context, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := s.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage() = %T, want *a2a.Task", res)
	}
	if task.ID == "" || task.ContextID == "" {
		t.Fatalf("SendMessage() task without id or contextId: %+v", task)
	}
	return task
}

// await polls GetTask until the task is in state want; another terminal
// state, an error or the deadline fails the test.
func (s *session) await(t *testing.T, ctx context.Context, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		task, err := s.c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		s.gets++
		if err != nil {
			t.Fatalf("GetTask(%s) error = %v", id, err)
		}
		if task.Status.State == want {
			return task
		}
		if task.Status.State.Terminal() {
			t.Fatalf("GetTask(%s) state = %s, want %s (status message %q)", id, task.Status.State, want, statusText(task))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s: still %s, waiting for %s: %v", id, task.Status.State, want, ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *session) counts(t *testing.T, ctx context.Context, want Counts) {
	t.Helper()
	got, err := s.agent.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
}

func statusText(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	var parts []string
	for _, p := range task.Status.Message.Parts {
		if txt := p.Text(); txt != "" {
			parts = append(parts, txt)
		}
	}
	return strings.Join(parts, " ")
}

func checkClaim(t *testing.T, task *a2a.Task, orderID string) {
	t.Helper()
	if len(task.Artifacts) != 1 {
		t.Fatalf("artifacts = %d, want 1: %+v", len(task.Artifacts), task.Artifacts)
	}
	art := task.Artifacts[0]
	if art.Name != ArtifactName || len(art.Parts) != 1 {
		t.Fatalf("artifact = %q with %d parts, want %q with 1", art.Name, len(art.Parts), ArtifactName)
	}
	data, ok := art.Parts[0].Data().(map[string]any)
	if !ok {
		t.Fatalf("artifact part = %#v, want a data part with an object", art.Parts[0].Content)
	}
	if id, _ := data["claim_id"].(string); !strings.HasPrefix(id, "CLM-") || data["order_id"] != orderID || len(data) != 2 {
		t.Fatalf("artifact data = %v, want {claim_id: CLM-..., order_id: %s}", data, orderID)
	}
}

// ---------------------------------------------------------------- tests

func TestOptionsArgs(t *testing.T) {
	got, err := Options{}.args()
	if want := "--sdk 1 --bindings jsonrpc --port 0"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("Options{}.args() = %q, %v; want %q", got, err, want)
	}
	got, err = Options{SDK: SDK03, Bindings: []string{BindingREST, BindingJSONRPC}, WorkDelay: 20 * time.Millisecond}.args()
	if want := "--sdk 0.3 --bindings rest,jsonrpc --port 0 --work-ms 20"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("args() = %q, %v; want %q", got, err, want)
	}
	got, err = Options{Bindings: []string{BindingJSONRPC, BindingGRPC}, OAuth: true, ClientID: "w", ClientSecret: "s3cret",
		TokenTTL: 1500 * time.Millisecond, TokenURLOverride: "https://elsewhere.example/token", RefuseTokens: true,
		SecurityForm: SecurityFormMap, ExtendedCard: true}.args()
	if want := "--sdk 1 --bindings jsonrpc,grpc --port 0 --oauth --client-id w --token-ttl-ms 1500 " +
		"--token-url-override https://elsewhere.example/token --refuse-tokens --security-form map --extended-card"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("args() = %q, %v; want %q", got, err, want)
	}
	if got, err := (Options{Bearer: "tok", ExtendedCard: true}).args(); err != nil || strings.Contains(strings.Join(got, " "), "tok") {
		t.Errorf("args() = %q, %v; want no error and no bearer in argv", got, err)
	}
	// Secrets stay out of formatted options.
	o := Options{OAuth: true, ClientID: "w", ClientSecret: "s3cret-value", Bearer: "bearer-value", SignJWK: []byte(`{"d":"private-key"}`)}
	for _, f := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%v", &o)} {
		if strings.Contains(f, "s3cret-value") || strings.Contains(f, "bearer-value") || strings.Contains(f, "private-key") || !strings.Contains(f, "ClientID:w") {
			t.Errorf("formatted options = %s, want the secrets redacted", f)
		}
	}
	for _, o := range []Options{
		{SDK: "2"},
		{Bindings: []string{"soap"}},
		{SDK: SDK03, Bindings: []string{BindingGRPC}},
		{Bindings: []string{BindingREST, BindingREST}},
		{SDK: SDK03, SignJWK: []byte(`{}`)},
		{SDK: SDK03, Card03Fields: true},
		{OAuth: true, ClientID: "w"},
		{OAuth: true, ClientSecret: "s"},
		{OAuth: true, ClientID: "w", ClientSecret: "s", Bearer: "b"},
		{OAuth: true, ClientID: "w", ClientSecret: "s", TokenTTL: -time.Second},
		{OAuth: true, ClientID: "w", ClientSecret: "s", TokenURLOverride: "/relative"},
		{ClientID: "w"},
		{RefuseTokens: true},
		{TokenTTL: time.Second},
		{SecurityForm: SecurityFormProto},
		{Bearer: "b", SecurityForm: "yaml"},
		{SDK: SDK03, Bearer: "b", SecurityForm: SecurityFormMap},
		{ExtendedCard: true},
		{SDK: SDK03, Bearer: "b", ExtendedCard: true},
	} {
		if _, err := Start(context.Background(), o); err == nil {
			t.Errorf("Start(%+v) error = nil, want an error", o)
		}
	}
}

func TestAvailableMissing(t *testing.T) {
	err := Available(t.TempDir())
	if err == nil {
		t.Fatal("Available(empty dir) = nil, want an error")
	}
	if !strings.Contains(err.Error(), "agent.mjs") && !strings.Contains(err.Error(), "node") {
		t.Errorf("Available(empty dir) = %v, want it to name what is missing", err)
	}
	if _, err := Start(context.Background(), Options{Dir: t.TempDir()}); err == nil {
		t.Error("Start(empty dir) = nil error, want an error")
	}
}

// TestStartContext: the agent lives as long as Start's context, and Stop
// may follow.
func TestStartContext(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := Start(ctx, Options{SDK: SDK03})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer a.Stop()
	c, err := a.Counts(context.Background())
	if err != nil || c != (Counts{}) {
		t.Fatalf("Counts() = %+v, %v; want zeros", c, err)
	}
	cancel()
	select {
	case <-a.exited:
	case <-time.After(StopTimeout + 5*time.Second):
		t.Fatal("the agent did not exit after its context ended")
	}
	if !strings.Contains(a.Stderr(), "SIGTERM") {
		t.Errorf("stderr = %q, want the agent to report a SIGTERM", a.Stderr())
	}
	a.Stop()
	if _, err := a.Counts(context.Background()); err == nil {
		t.Error("Counts() after exit = nil error")
	}
}

func TestTail(t *testing.T) {
	tl := &tail{limit: 8}
	fmt.Fprint(tl, "0123456789")
	fmt.Fprint(tl, "ab")
	if got := tl.String(); got != "...456789ab" {
		t.Errorf("tail = %q", got)
	}
}

func TestCard(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	both := []string{BindingJSONRPC, BindingREST}
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"sdk1", Options{SDK: SDK1, Bindings: both}},
		{"sdk1-card03", Options{SDK: SDK1, Bindings: both, Card03Fields: true}},
		{"sdk03", Options{SDK: SDK03, Bindings: both}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := start(t, tc.o)
			if !strings.HasPrefix(a.URL, "http://127.0.0.1:") || a.CardURL != a.URL+"/.well-known/agent-card.json" {
				t.Fatalf("URL = %q, CardURL = %q", a.URL, a.CardURL)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			card, body := fetchCard(t, ctx, a)
			if card["name"] != "js-claims-agent" {
				t.Errorf("name = %v", card["name"])
			}
			skills, _ := card["skills"].([]any)
			if len(skills) != 1 || skills[0].(map[string]any)["id"] != "open-claim" {
				t.Errorf("skills = %v, want one with id open-claim", skills)
			}
			if caps, _ := card["capabilities"].(map[string]any); caps["streaming"] != true {
				t.Errorf("capabilities = %v, want streaming true", caps)
			}
			jsonrpcURL, restURL := a.URL+"/a2a/jsonrpc", a.URL+"/a2a/rest"
			if tc.o.SDK == SDK1 {
				want := []any{
					map[string]any{"url": jsonrpcURL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
					map[string]any{"url": restURL, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
				}
				if got := card["supportedInterfaces"]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("supportedInterfaces = %v, want %v", got, want)
				}
			} else if _, has := card["supportedInterfaces"]; has {
				t.Errorf("0.3 card has supportedInterfaces: %s", body)
			}
			if tc.o.SDK == SDK03 || tc.o.Card03Fields {
				if card["url"] != jsonrpcURL || card["preferredTransport"] != "JSONRPC" || card["protocolVersion"] != "0.3.0" {
					t.Errorf("url, preferredTransport, protocolVersion = %v, %v, %v", card["url"], card["preferredTransport"], card["protocolVersion"])
				}
				want := []any{
					map[string]any{"url": jsonrpcURL, "transport": "JSONRPC"},
					map[string]any{"url": restURL, "transport": "HTTP+JSON"},
				}
				if got := card["additionalInterfaces"]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("additionalInterfaces = %v, want %v", got, want)
				}
			} else {
				for _, k := range []string{"url", "preferredTransport", "protocolVersion", "additionalInterfaces"} {
					if _, has := card[k]; has {
						t.Errorf("1.0 card has the 0.3 field %q", k)
					}
				}
			}
			// a2a-go's card parser (1.0 and 0.3) reads both interfaces.
			parsed, err := a2av0.NewAgentCardParser()(body)
			if err != nil {
				t.Fatalf("a2av0 card parser: %v", err)
			}
			var got []string
			for _, i := range parsed.SupportedInterfaces {
				got = append(got, fmt.Sprintf("%s %s %s", i.ProtocolBinding, i.ProtocolVersion, i.URL))
			}
			ver := "1.0"
			if tc.o.SDK == SDK03 {
				ver = "0.3.0"
			}
			want := []string{"JSONRPC " + ver + " " + jsonrpcURL, "HTTP+JSON " + ver + " " + restURL}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("a2a-go parsed interfaces = %q, want %q", got, want)
			}
		})
	}
}

// TestSignedCard checks the card signatures the a2a-js 1.3.0 signer writes
// against the A2A 1.0 §8.4 recipe this project verifies with: ES256 JWS
// over the RFC 8785 form of the served card without "signatures".
func TestSignedCard(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := key.ECDH()
	if err != nil {
		t.Fatal(err)
	}
	pub := ek.PublicKey().Bytes() // 0x04 || X || Y
	b64 := base64.RawURLEncoding.EncodeToString
	jwk, _ := json.Marshal(map[string]string{
		"kty": "EC", "crv": "P-256", "kid": "interop-key-1",
		"x": b64(pub[1:33]), "y": b64(pub[33:]), "d": b64(ek.Bytes()),
	})

	// verify reports whether sig verifies over the JCS form of card (a JSON
	// object, "signatures" removed) minus the given top-level keys.
	verify := func(t *testing.T, card map[string]json.RawMessage, sig map[string]string, drop ...string) bool {
		t.Helper()
		c := map[string]json.RawMessage{}
		for k, v := range card {
			c[k] = v
		}
		delete(c, "signatures")
		for _, k := range drop {
			delete(c, k)
		}
		raw, _ := json.Marshal(c)
		payload, err := jcs.Transform(raw)
		if err != nil {
			t.Fatal(err)
		}
		s, err := base64.RawURLEncoding.DecodeString(sig["signature"])
		if err != nil || len(s) != 64 {
			t.Fatalf("signature is not 64 bytes of base64url: %v", err)
		}
		h := sha256.Sum256([]byte(sig["protected"] + "." + b64(payload)))
		return ecdsa.Verify(&key.PublicKey, h[:], new(big.Int).SetBytes(s[:32]), new(big.Int).SetBytes(s[32:]))
	}
	fetch := func(t *testing.T, a *Agent) (map[string]json.RawMessage, map[string]string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, body := fetchCard(t, ctx, a)
		var card map[string]json.RawMessage
		var sigs []map[string]string
		if err := json.Unmarshal(body, &card); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(card["signatures"], &sigs); err != nil || len(sigs) != 1 {
			t.Fatalf("signatures = %s, want one: %v", card["signatures"], err)
		}
		if len(sigs[0]) != 2 || sigs[0]["protected"] == "" || sigs[0]["signature"] == "" {
			t.Fatalf("signature entry = %v, want exactly protected and signature", sigs[0])
		}
		hdr, err := base64.RawURLEncoding.DecodeString(sigs[0]["protected"])
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"alg":"ES256","kid":"interop-key-1","typ":"JOSE"}`; string(hdr) != want {
			t.Errorf("protected header = %s, want %s", hdr, want)
		}
		return card, sigs[0]
	}

	t.Run("sdk1", func(t *testing.T) {
		t.Parallel()
		a := start(t, Options{SDK: SDK1, Bindings: []string{BindingJSONRPC, BindingREST}, SignJWK: jwk})
		card, sig := fetch(t, a)
		if !verify(t, card, sig) {
			t.Errorf("the signature does not verify over JCS(card without signatures)")
		}
		// The SDK signs again on every fetch, and ES256 is randomized.
		_, sig2 := fetch(t, a)
		if sig2["signature"] == sig["signature"] {
			t.Errorf("two fetches gave the same signature; the SDK was expected to sign per fetch")
		}
	})
	t.Run("sdk1-card03", func(t *testing.T) {
		t.Parallel()
		a := start(t, Options{SDK: SDK1, Bindings: []string{BindingJSONRPC, BindingREST}, SignJWK: jwk, Card03Fields: true})
		card, sig := fetch(t, a)
		// The SDK's canonicalizeAgentCard drops fields outside the 1.0
		// schema before signing: the 0.3 fields are served but not signed.
		if verify(t, card, sig) {
			t.Errorf("the signature verifies over the whole served card; expected the a2a-js signer to leave out the 0.3 fields")
		}
		if !verify(t, card, sig, "url", "preferredTransport", "protocolVersion", "additionalInterfaces") {
			t.Errorf("the signature does not verify over the card without its 0.3 fields")
		}
	})
}

// TestScenarios drives every scenario through a2a-go v2.4.0 against each
// a2a-js server and binding.
func TestScenarios(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			if tg.skip != "" {
				t.Skip(tg.skip)
			}
			s := newSession(t, tg)

			t.Run("lost-parcel", func(t *testing.T) {
				ctx := s.begin(t)
				task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioLostParcel, "order_id": "B-2002"}))
				ir := s.await(t, ctx, task.ID, a2a.TaskStateInputRequired)
				if got := statusText(ir); got != QuestionText {
					t.Errorf("question = %q, want %q", got, QuestionText)
				}
				reply := s.send(t, ctx, followUp(task))
				if reply.ID != task.ID || reply.ContextID != task.ContextID {
					t.Errorf("follow-up reply is task %s/%s, want %s/%s", reply.ID, reply.ContextID, task.ID, task.ContextID)
				}
				t.Logf("%s: follow-up reply state (returnImmediately): %s", tg.name, reply.Status.State)
				done := s.await(t, ctx, task.ID, a2a.TaskStateCompleted)
				checkClaim(t, done, "B-2002")
				s.counts(t, ctx, Counts{Messages: 2, Tasks: 1, GetTasks: s.gets})
			})

			t.Run("instant", func(t *testing.T) {
				ctx := s.begin(t)
				task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioInstant}))
				if task.Status.State != a2a.TaskStateCompleted {
					t.Errorf("reply state = %s, want %s", task.Status.State, a2a.TaskStateCompleted)
				}
				checkClaim(t, s.await(t, ctx, task.ID, a2a.TaskStateCompleted), DefaultOrderID)
				s.counts(t, ctx, Counts{Messages: 1, Tasks: 1, GetTasks: s.gets})
			})

			for _, tc := range []struct {
				scenario string
				state    a2a.TaskState
				text     string
			}{
				{ScenarioFail, a2a.TaskStateFailed, FailText},
				{ScenarioReject, a2a.TaskStateRejected, RejectText},
			} {
				t.Run(tc.scenario, func(t *testing.T) {
					ctx := s.begin(t)
					task := s.send(t, ctx, firstMessage(map[string]any{"scenario": tc.scenario}))
					end := s.await(t, ctx, task.ID, tc.state)
					if got := statusText(end); got != tc.text {
						t.Errorf("status message = %q, want %q", got, tc.text)
					}
					if len(end.Artifacts) != 0 {
						t.Errorf("artifacts = %v, want none", end.Artifacts)
					}
					s.counts(t, ctx, Counts{Messages: 1, Tasks: 1, GetTasks: s.gets})
				})
			}

			t.Run("slow-cancel", func(t *testing.T) {
				ctx := s.begin(t)
				task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioSlow}))
				s.await(t, ctx, task.ID, a2a.TaskStateWorking)
				got, err := s.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
				if err != nil {
					t.Fatalf("CancelTask() error = %v", err)
				}
				if got.Status.State != a2a.TaskStateCanceled {
					t.Errorf("CancelTask() state = %s, want %s", got.Status.State, a2a.TaskStateCanceled)
				}
				s.await(t, ctx, task.ID, a2a.TaskStateCanceled)
				s.counts(t, ctx, Counts{Messages: 1, Tasks: 1, Cancels: 1, GetTasks: s.gets})
			})

			// Cancel while the agent waits for input: the 1.x SDK still has
			// the task's event bus and asks the executor; 0.3.14 dropped it
			// and writes CANCELED itself.
			t.Run("input-required-cancel", func(t *testing.T) {
				ctx := s.begin(t)
				task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioLostParcel}))
				s.await(t, ctx, task.ID, a2a.TaskStateInputRequired)
				got, err := s.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
				if err != nil {
					t.Fatalf("CancelTask() error = %v", err)
				}
				if got.Status.State != a2a.TaskStateCanceled {
					t.Errorf("CancelTask() state = %s, want %s", got.Status.State, a2a.TaskStateCanceled)
				}
				s.await(t, ctx, task.ID, a2a.TaskStateCanceled)
				s.counts(t, ctx, Counts{Messages: 1, Tasks: 1, Cancels: 1, GetTasks: s.gets})
			})

			for _, tc := range []struct {
				scenario string
				state    a2a.TaskState
				text     string
			}{
				{ScenarioSelfCancel, a2a.TaskStateCanceled, SelfCancelText},
				{ScenarioSelfFail, a2a.TaskStateFailed, SelfFailText},
				{ScenarioSelfComplete, a2a.TaskStateCompleted, ""},
			} {
				t.Run(tc.scenario, func(t *testing.T) {
					ctx := s.begin(t)
					// after_ms leaves the poll a wide window to see INPUT_REQUIRED.
					task := s.send(t, ctx, firstMessage(map[string]any{"scenario": tc.scenario, "after_ms": 1000}))
					s.await(t, ctx, task.ID, a2a.TaskStateInputRequired)
					end := s.await(t, ctx, task.ID, tc.state)
					if got := statusText(end); got != tc.text {
						t.Errorf("status message = %q, want %q", got, tc.text)
					}
					if tc.state == a2a.TaskStateCompleted {
						checkClaim(t, end, DefaultOrderID)
					}
					s.counts(t, ctx, Counts{Messages: 1, Tasks: 1, GetTasks: s.gets})
				})
			}
		})
	}
}

// TestErrors checks that a2a-go maps the a2a-js servers' errors to its
// sentinel errors: an unknown task, a cancel of a finished task, and a
// message to a finished task (the SDKs differ there: 1.x answers
// UnsupportedOperation, 0.3.14 InvalidRequest).
func TestErrors(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			if tg.skip != "" {
				t.Skip(tg.skip)
			}
			if tg.errSkip != "" {
				t.Skip(tg.errSkip)
			}
			s := newSession(t, tg)
			ctx := s.begin(t)
			_, err := s.c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(uuid.NewString())})
			if !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("GetTask(unknown) error = %v, want ErrTaskNotFound", err)
			}
			task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioInstant}))
			s.await(t, ctx, task.ID, a2a.TaskStateCompleted)
			_, err = s.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
			if !errors.Is(err, a2a.ErrTaskNotCancelable) {
				t.Errorf("CancelTask(completed) error = %v, want ErrTaskNotCancelable", err)
			}
			_, err = s.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
			want := a2a.ErrUnsupportedOperation
			if tg.sdk == SDK03 {
				want = a2a.ErrInvalidRequest
			}
			if !errors.Is(err, want) {
				t.Errorf("SendMessage(to a completed task) error = %v, want %v", err, want)
			}
		})
	}
}

// TestFollowUpWire records what each server sends for a follow-up on an
// INPUT_REQUIRED task: the reply to a returnImmediately SendMessage, and the
// states a SubscribeToTask stream (opened before the follow-up) and a
// SendStreamingMessage stream see. Run with -v to see the captured bodies.
func TestFollowUpWire(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			if tg.skip != "" {
				t.Skip(tg.skip)
			}
			s := newSession(t, tg)

			t.Run("send", func(t *testing.T) {
				ctx := s.begin(t)
				task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioLostParcel}))
				question := s.await(t, ctx, task.ID, a2a.TaskStateInputRequired)

				// A subscriber opened on the INPUT_REQUIRED task.
				subCtx, stopSub := context.WithCancel(ctx)
				defer stopSub()
				type seen struct {
					states []string
					err    error
				}
				subbed := make(chan struct{})
				result := make(chan seen, 1)
				go func() {
					var sn seen
					first := true
					for ev, err := range s.c.SubscribeToTask(subCtx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
						if err != nil {
							sn.err = err
							break
						}
						sn.states = append(sn.states, eventState(ev))
						if first {
							first = false
							close(subbed)
						}
					}
					if first {
						close(subbed)
					}
					result <- sn
				}()
				<-subbed

				m := s.w.mark()
				reply := s.send(t, ctx, followUp(task))
				t.Logf("%s: follow-up with returnImmediately, reply state %s; wire:\n%s", tg.name, reply.Status.State, s.w.since(m))
				// What the workflow relies on: the reply is the same task,
				// moved on, or republished as it stood when it was answered
				// (a2a-js 1.x): the same status, so that it is not taken for
				// a new question (workflows, stale).
				if reply.ID != task.ID || reply.ContextID != task.ContextID {
					t.Errorf("follow-up reply names task %q context %q, want %q %q", reply.ID, reply.ContextID, task.ID, task.ContextID)
				}
				switch reply.Status.State {
				case a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted:
				case a2a.TaskStateInputRequired:
					t.Logf("%s: republished question: %s; the question answered: %s", tg.name, statusID(reply.Status), statusID(question.Status))
					if !sameStatus(reply.Status, question.Status) {
						t.Errorf("follow-up reply is INPUT_REQUIRED with another status (%s) than the question answered (%s): it reads as a new question",
							statusID(reply.Status), statusID(question.Status))
					}
				default:
					t.Errorf("follow-up reply state %s, want the question republished, SUBMITTED, WORKING or COMPLETED", reply.Status.State)
				}
				s.await(t, ctx, task.ID, a2a.TaskStateCompleted)
				var sn seen
				select {
				case sn = <-result:
				case <-time.After(5 * time.Second):
					stopSub()
					sn = <-result
					sn.err = fmt.Errorf("stream still open 5 s after COMPLETED (canceled by the test)")
				}
				t.Logf("%s: SubscribeToTask opened at INPUT_REQUIRED saw %v (end: %v)", tg.name, sn.states, sn.err)
				// The stream starts with the task as it stands; a2a-js 1.x
				// then follows it to COMPLETED, 0.3.x closes it after that
				// first task (the workflow reads a 0.3 task again).
				if sn.err != nil {
					t.Errorf("SubscribeToTask: %v", sn.err)
				}
				if len(sn.states) == 0 || sn.states[0] != "task:"+string(a2a.TaskStateInputRequired) {
					t.Fatalf("SubscribeToTask saw %v, want the INPUT_REQUIRED task first", sn.states)
				}
				if last := sn.states[len(sn.states)-1]; tg.sdk != SDK03 && !strings.HasSuffix(last, ":"+string(a2a.TaskStateCompleted)) {
					t.Errorf("SubscribeToTask saw %v, want it to follow the task to COMPLETED", sn.states)
				}
			})

			t.Run("stream", func(t *testing.T) {
				ctx := s.begin(t)
				task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioLostParcel}))
				s.await(t, ctx, task.ID, a2a.TaskStateInputRequired)
				m := s.w.mark()
				var states []string
				var serr error
				for ev, err := range s.c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task)}) {
					if err != nil {
						serr = err
						break
					}
					states = append(states, eventState(ev))
				}
				t.Logf("%s: SendStreamingMessage follow-up saw %v (end: %v); wire:\n%s", tg.name, states, serr, s.w.since(m))
				if serr != nil {
					t.Errorf("SendStreamingMessage() error = %v", serr)
				}
				checkClaim(t, s.await(t, ctx, task.ID, a2a.TaskStateCompleted), DefaultOrderID)
				s.counts(t, ctx, Counts{Messages: 2, Tasks: 1, GetTasks: s.gets})
			})
		})
	}
}

// sameStatus reports whether two statuses are the same status update: the
// same state, status message id and timestamp.
func sameStatus(a, b a2a.TaskStatus) bool {
	return a.State == b.State && statusID(a) == statusID(b)
}

// statusID names a status by its message id and timestamp.
func statusID(s a2a.TaskStatus) string {
	id, at := "", ""
	if s.Message != nil {
		id = string(s.Message.ID)
	}
	if s.Timestamp != nil {
		at = s.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return "message " + id + " at " + at
}

func eventState(ev a2a.Event) string {
	switch e := ev.(type) {
	case *a2a.Task:
		return "task:" + string(e.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		return "status:" + string(e.Status.State)
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact:" + e.Artifact.Name
	case *a2a.Message:
		return "message"
	}
	return fmt.Sprintf("%T", ev)
}

// ---------------------------------------------------------------- production peers

// grpcClient is a2a-go's gRPC transport with insecure credentials (the
// agent listens on loopback only); creds, when set, adds per-call metadata.
func grpcClient(t *testing.T, ctx context.Context, card *a2a.AgentCard, creds credentials.PerRPCCredentials) *sdk.Client {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if creds != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(creds))
	}
	c, err := sdk.NewFactory(sdk.WithDefaultsDisabled(), a2agrpc.WithGRPCTransport(opts...),
		sdk.WithConfig(sdk.Config{DisableTenantPropagation: true})).CreateFromCard(ctx, card)
	if err != nil {
		t.Fatalf("CreateFromCard(gRPC) error = %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// bearerCreds puts "authorization: Bearer TOKEN" on every gRPC call, on
// an insecure loopback connection.
type bearerCreds string

func (b bearerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearerCreds) RequireTransportSecurity() bool { return false }

// jsonrpcClient is a2a-go's JSON-RPC transport over hc (nil: no
// credentials), created from the card.
func jsonrpcClient(t *testing.T, ctx context.Context, card *a2a.AgentCard, hc *http.Client, w *wire) *sdk.Client {
	t.Helper()
	if hc == nil {
		hc = &http.Client{}
	}
	base := hc.Transport
	if base == nil {
		base = &http.Transport{Proxy: nil}
	}
	w.base = base
	hc2 := *hc
	hc2.Transport = w
	c, err := sdk.NewFactory(sdk.WithDefaultsDisabled(), sdk.WithJSONRPCTransport(&hc2),
		sdk.WithConfig(sdk.Config{DisableTenantPropagation: true})).CreateFromCard(ctx, card)
	if err != nil {
		t.Fatalf("CreateFromCard(JSON-RPC) error = %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// parseCard reads the agent's card with this repository's card reader and
// with a2a-go's.
func parseCard(t *testing.T, ctx context.Context, a *Agent) (map[string]any, *a2a.AgentCard) {
	t.Helper()
	raw, body := fetchCard(t, ctx, a)
	c, err := cards.Parse(body)
	if err != nil {
		t.Fatalf("cards.Parse() error = %v; card: %s", err, body)
	}
	return raw, c.Parsed
}

func randomSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func skillIDs(card *a2a.AgentCard) []string {
	var ids []string
	for _, s := range card.Skills {
		ids = append(ids, s.ID)
	}
	return ids
}

func hasSkill(card *a2a.AgentCard, id string) bool {
	for _, s := range card.Skills {
		if s.ID == id {
			return true
		}
	}
	return false
}

func (s *session) countsOf(t *testing.T, ctx context.Context) Counts {
	t.Helper()
	got, err := s.agent.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// lostParcel runs the lost-parcel scenario through s.c up to COMPLETED.
func (s *session) lostParcel(t *testing.T, ctx context.Context, orderID string) {
	t.Helper()
	task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioLostParcel, "order_id": orderID}))
	ir := s.await(t, ctx, task.ID, a2a.TaskStateInputRequired)
	if got := statusText(ir); got != QuestionText {
		t.Errorf("question = %q, want %q", got, QuestionText)
	}
	reply := s.send(t, ctx, followUp(task))
	if reply.ID != task.ID {
		t.Errorf("follow-up reply is task %s, want %s", reply.ID, task.ID)
	}
	checkClaim(t, s.await(t, ctx, task.ID, a2a.TaskStateCompleted), orderID)
}

// TestGRPC drives the gRPC-only a2a-js agent with a2a-go's gRPC client
// transport, from the target its card names.
func TestGRPC(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	a := start(t, Options{SDK: SDK1, Bindings: []string{BindingGRPC}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, card := parseCard(t, ctx, a)
	want := []any{map[string]any{"url": a.GRPCAddr, "protocolBinding": "GRPC", "protocolVersion": "1.0"}}
	if got := raw["supportedInterfaces"]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("supportedInterfaces = %v, want %v", got, want)
	}
	if !strings.HasPrefix(a.GRPCAddr, "127.0.0.1:") {
		t.Fatalf("GRPCAddr = %q", a.GRPCAddr)
	}
	t.Logf("the card names the gRPC interface %q (bare host:port)", a.GRPCAddr)

	s := &session{agent: a, w: &wire{}, c: grpcClient(t, ctx, card, nil)}
	t.Run("lost-parcel", func(t *testing.T) {
		ctx := s.begin(t)
		s.lostParcel(t, ctx, "G-3003")
		s.counts(t, ctx, Counts{Messages: 2, Tasks: 1, GetTasks: s.gets})
	})
	t.Run("errors", func(t *testing.T) {
		ctx := s.begin(t)
		if _, err := s.c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(uuid.NewString())}); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("GetTask(unknown) error = %v, want ErrTaskNotFound", err)
		}
	})

	// Combined with JSON-RPC: both interfaces, in the order given, and each
	// answers.
	t.Run("jsonrpc+grpc", func(t *testing.T) {
		a := start(t, Options{SDK: SDK1, Bindings: []string{BindingJSONRPC, BindingGRPC}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		raw, card := parseCard(t, ctx, a)
		want := []any{
			map[string]any{"url": a.URL + "/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			map[string]any{"url": a.GRPCAddr, "protocolBinding": "GRPC", "protocolVersion": "1.0"},
		}
		if got := raw["supportedInterfaces"]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("supportedInterfaces = %v, want %v", got, want)
		}
		for name, c := range map[string]*sdk.Client{
			"grpc":    grpcClient(t, ctx, card, nil),
			"jsonrpc": jsonrpcClient(t, ctx, card, nil, &wire{}),
		} {
			s := &session{agent: a, w: &wire{}, c: c}
			task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioInstant}))
			if task.Status.State != a2a.TaskStateCompleted {
				t.Errorf("%s: state = %s, want COMPLETED", name, task.Status.State)
			}
		}
		s := &session{agent: a}
		if got := s.countsOf(t, ctx); got.Messages != 2 || got.Tasks != 2 {
			t.Errorf("Counts() = %+v, want 2 messages and 2 tasks", got)
		}
	})
}

// rawJSONRPC sends a raw JSON-RPC GetTask with the given Authorization header
// ("" for none) and returns the status, the WWW-Authenticate header and
// the body.
func rawJSONRPC(t *testing.T, ctx context.Context, a *Agent, authz string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + uuid.NewString() + `"}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/a2a/jsonrpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// checkOAuthCard asserts what this repository's card reader makes of the
// card's OAuth scheme and requirement.
func checkOAuthCard(t *testing.T, card *a2a.AgentCard, tokenURL string) {
	t.Helper()
	scheme, ok := card.SecuritySchemes[OAuthScheme].(a2a.OAuth2SecurityScheme)
	if !ok {
		t.Fatalf("securitySchemes[%s] = %#v, want an OAuth2SecurityScheme", OAuthScheme, card.SecuritySchemes[OAuthScheme])
	}
	flow, ok := scheme.Flows.(a2a.ClientCredentialsOAuthFlow)
	if !ok || flow.TokenURL != tokenURL || flow.Scopes[OAuthScope] == "" {
		t.Errorf("flows = %#v, want clientCredentials with tokenUrl %s and scope %s", scheme.Flows, tokenURL, OAuthScope)
	}
	want := a2a.SecurityRequirementsOptions{{OAuthScheme: {OAuthScope}}}
	if fmt.Sprint(card.SecurityRequirements) != fmt.Sprint(want) {
		t.Errorf("securityRequirements = %v, want %v", card.SecurityRequirements, want)
	}
}

// TestOAuth: the agent's own client-credentials token endpoint, tokens on
// JSON-RPC and gRPC, refusals, expiry, and the card in both forms.
func TestOAuth(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	const clientID = "delegate-worker"
	secret := randomSecret(t)

	t.Run("proto", func(t *testing.T) {
		t.Parallel()
		a := start(t, Options{SDK: SDK1, Bindings: []string{BindingJSONRPC, BindingREST, BindingGRPC}, OAuth: true, ClientID: clientID, ClientSecret: secret})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		raw, card := parseCard(t, ctx, a)
		wantReq := []any{map[string]any{"schemes": map[string]any{OAuthScheme: map[string]any{"list": []any{OAuthScope}}}}}
		if got := raw["securityRequirements"]; fmt.Sprint(got) != fmt.Sprint(wantReq) {
			t.Errorf("served securityRequirements = %v, want the proto form %v", got, wantReq)
		}
		checkOAuthCard(t, card, a.TokenURL)
		s := &session{agent: a, w: &wire{}}

		// A token through golang.org/x/oauth2, then a JSON-RPC call with it.
		cc := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: a.TokenURL, Scopes: []string{OAuthScope}}
		s.c = jsonrpcClient(t, ctx, card, cc.Client(ctx), s.w)
		task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioInstant}))
		checkClaim(t, s.await(t, ctx, task.ID, a2a.TaskStateCompleted), DefaultOrderID)
		if got := s.countsOf(t, ctx); got.TokenRequests != 1 || got.TokenGrants != 1 || got.Messages != 1 || got.Unauthorized != 0 {
			t.Errorf("Counts() = %+v, want one token request and grant, one message, no refusal", got)
		}

		// Both client authentications of RFC 6749 §2.3.1.
		for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
			c := cc
			c.AuthStyle = style
			tok, err := c.Token(ctx)
			if err != nil || tok.AccessToken == "" || tok.TokenType != "Bearer" || tok.Extra("scope") != OAuthScope {
				t.Errorf("Token(auth style %d) = %+v, %v", style, tok, err)
			}
			if exp := time.Until(tok.Expiry); exp < 50*time.Minute || exp > time.Hour+time.Minute {
				t.Errorf("token expires in %s, want about an hour", exp)
			}
		}

		// Wrong secret: 401 invalid_client.
		bad := cc
		bad.ClientSecret = secret + "x"
		_, err := bad.Token(ctx)
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.Response.StatusCode != http.StatusUnauthorized || re.ErrorCode != "invalid_client" {
			t.Errorf("Token(wrong secret) error = %v, want HTTP 401 invalid_client", err)
		}

		// No token, an unknown token: 401 before the SDK.
		if err := a.ResetCounts(ctx); err != nil {
			t.Fatal(err)
		}
		status, challenge, body := rawJSONRPC(t, ctx, a, "")
		if status != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer ") || strings.Contains(challenge, "error=") {
			t.Errorf("no token: HTTP %d, WWW-Authenticate %q, body %s; want 401 with a Bearer challenge without error", status, challenge, body)
		}
		status, challenge, body = rawJSONRPC(t, ctx, a, "Bearer "+randomSecret(t))
		if status != http.StatusUnauthorized || !strings.Contains(challenge, `error="invalid_token"`) {
			t.Errorf("unknown token: HTTP %d, WWW-Authenticate %q, body %s; want 401 invalid_token", status, challenge, body)
		}
		noToken := jsonrpcClient(t, ctx, card, nil, &wire{})
		if _, err := noToken.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("a2a-go GetTask without a token: error = %v, want HTTP 401", err)
		}

		// gRPC: metadata authorization, UNAUTHENTICATED without it.
		tok, err := cc.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		anon := grpcClient(t, ctx, card, nil)
		if _, err := anon.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrUnauthenticated) {
			t.Errorf("gRPC GetTask without a token: error = %v, want ErrUnauthenticated", err)
		}
		var streamErr error
		for _, err := range anon.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: firstMessage(map[string]any{"scenario": ScenarioInstant})}) {
			if streamErr = err; err != nil {
				break
			}
		}
		if !errors.Is(streamErr, a2a.ErrUnauthenticated) {
			t.Errorf("gRPC SendStreamingMessage without a token: error = %v, want ErrUnauthenticated", streamErr)
		}
		gs := &session{agent: a, w: &wire{}, c: grpcClient(t, ctx, card, bearerCreds(tok.AccessToken))}
		if got, err := gs.c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCompleted {
			t.Errorf("gRPC GetTask with a token = %v, %v; want the COMPLETED task", got, err)
		}

		// REST: the same gate.
		for _, tc := range []struct {
			authz string
			want  int
		}{{"", http.StatusUnauthorized}, {"Bearer " + tok.AccessToken, http.StatusOK}} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+"/a2a/rest/tasks/"+string(task.ID), nil)
			req.Header.Set("A2A-Version", "1.0")
			if tc.authz != "" {
				req.Header.Set("Authorization", tc.authz)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("REST GET task (token: %v): HTTP %d %s, want %d", tc.authz != "", resp.StatusCode, b, tc.want)
			}
		}
		if got := s.countsOf(t, ctx); got.Unauthorized != 6 || got.GetTasks != 2 || got.Messages != 0 {
			t.Errorf("Counts() = %+v, want 6 refusals (JSON-RPC none, unknown, a2a-go none; gRPC unary and stream; REST) and 2 GetTask let through", got)
		}
		if strings.Contains(a.Stderr(), secret) || strings.Contains(a.Stderr(), tok.AccessToken) {
			t.Errorf("the agent's stderr shows the client secret or a token")
		}
	})

	t.Run("map-and-expiry", func(t *testing.T) {
		t.Parallel()
		const ttl = 2 * time.Second
		a := start(t, Options{SDK: SDK1, OAuth: true, ClientID: clientID, ClientSecret: secret, TokenTTL: ttl, SecurityForm: SecurityFormMap})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		raw, card := parseCard(t, ctx, a)
		wantReq := []any{map[string]any{OAuthScheme: []any{OAuthScope}}}
		if got := raw["securityRequirements"]; fmt.Sprint(got) != fmt.Sprint(wantReq) {
			t.Errorf("served securityRequirements = %v, want the map form %v", got, wantReq)
		}
		checkOAuthCard(t, card, a.TokenURL)

		cc := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: a.TokenURL}
		old, err := cc.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if status, _, body := rawJSONRPC(t, ctx, a, "Bearer "+old.AccessToken); status != http.StatusOK {
			t.Fatalf("fresh token: HTTP %d %s, want 200", status, body)
		}
		// Wait, with a deadline, until the agent refuses the old token.
		deadline := time.Now().Add(ttl + 10*time.Second)
		for {
			status, challenge, _ := rawJSONRPC(t, ctx, a, "Bearer "+old.AccessToken)
			if status == http.StatusUnauthorized {
				if !strings.Contains(challenge, "expired") {
					t.Errorf("WWW-Authenticate = %q, want it to say the token expired", challenge)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the token is still accepted %s after it was granted (TTL %s)", time.Since(old.Expiry.Add(-ttl)), ttl)
			}
			time.Sleep(50 * time.Millisecond)
		}
		fresh, err := cc.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if status, _, body := rawJSONRPC(t, ctx, a, "Bearer "+fresh.AccessToken); status != http.StatusOK {
			t.Errorf("new token after expiry: HTTP %d %s, want 200", status, body)
		}
		if got := (&session{agent: a}).countsOf(t, ctx); got.TokenGrants != 2 || got.Unauthorized != 1 || got.GetTasks < 2 {
			t.Errorf("Counts() = %+v, want 2 grants, 1 refusal", got)
		}
	})

	t.Run("refuse-tokens-elsewhere", func(t *testing.T) {
		t.Parallel()
		const elsewhere = "https://tokens.example.invalid/oauth/token"
		a := start(t, Options{SDK: SDK1, OAuth: true, ClientID: clientID, ClientSecret: secret, RefuseTokens: true, TokenURLOverride: elsewhere})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, card := parseCard(t, ctx, a)
		checkOAuthCard(t, card, elsewhere)
		tok, err := (&clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: a.TokenURL}).Token(ctx)
		if err != nil {
			t.Fatalf("the agent's own endpoint: %v", err)
		}
		if status, challenge, _ := rawJSONRPC(t, ctx, a, "Bearer "+tok.AccessToken); status != http.StatusUnauthorized || !strings.Contains(challenge, "invalid_token") {
			t.Errorf("HTTP %d, WWW-Authenticate %q; want 401 invalid_token for a minted token", status, challenge)
		}
	})

	t.Run("sdk03", func(t *testing.T) {
		t.Parallel()
		a := start(t, Options{SDK: SDK03, OAuth: true, ClientID: clientID, ClientSecret: secret})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, card := parseCard(t, ctx, a)
		checkOAuthCard(t, card, a.TokenURL)
		cc := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: a.TokenURL}
		w := &wire{base: cc.Client(ctx).Transport}
		c, err := sdk.NewFactory(sdk.WithDefaultsDisabled(), a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: &http.Client{Transport: w}}),
			sdk.WithConfig(sdk.Config{DisableTenantPropagation: true})).CreateFromCard(ctx, card)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Destroy()
		s := &session{agent: a, w: w, c: c}
		task := s.send(t, ctx, firstMessage(map[string]any{"scenario": ScenarioInstant}))
		s.await(t, ctx, task.ID, a2a.TaskStateCompleted)
		if status, _, _ := rawJSONRPC(t, ctx, a, ""); status != http.StatusUnauthorized {
			t.Errorf("no token: HTTP %d, want 401", status)
		}
	})
}

// mismatchExtendedCard: a2a-go v2.4.0's JSON-RPC GetExtendedAgentCard
// decodes the result with its own AgentCard JSON model, which reads a
// SecurityRequirement only as {"schemes": {NAME: [scopes]}}; the a2a-js
// 1.3.0 server writes the extended card through its generated
// AgentCard.toJSON, i.e. A2A 1.0's proto JSON {"schemes": {NAME: {"list":
// [scopes]}}} (the SDK has no other form for it), so the call fails whenever
// the extended card declares a requirement. Over gRPC a2a-go reads it
// (protobuf). This repository's cards.Parse reads both forms.
const mismatchExtendedCard = "a2a-go v2.4.0 JSON-RPC GetExtendedAgentCard vs a2a-js 1.3.0: the extended card's " +
	"securityRequirements come in the proto JSON form {\"schemes\": {NAME: {\"list\": [...]}}} that a2a-go's AgentCard " +
	"unmarshal refuses (\"cannot unmarshal object into ... a2a.SecuritySchemeScopes\")"

// extendedFromWire reads the result of the last JSON-RPC exchange on w (a
// GetExtendedAgentCard) with cards.Parse.
func extendedFromWire(t *testing.T, w *wire) *a2a.AgentCard {
	t.Helper()
	w.mu.Lock()
	last := w.log[len(w.log)-1]
	w.mu.Unlock()
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(last.resp.String()), &env); err != nil || len(env.Result) == 0 {
		t.Fatalf("GetExtendedAgentCard reply is not a JSON-RPC result: %v: %s", err, last.resp.String())
	}
	c, err := cards.Parse(env.Result)
	if err != nil {
		t.Fatalf("cards.Parse(extended card) error = %v", err)
	}
	return c.Parsed
}

// TestExtendedCard: the public card lacks the claim skill, the extended
// card (a2a-go GetExtendedAgentCard over JSON-RPC, the SDK's own answer)
// has it, and without a valid token it is refused.
func TestExtendedCard(t *testing.T) {
	requireAgent(t)
	t.Parallel()
	bearer := randomSecret(t)
	secret := randomSecret(t)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"bearer", Options{SDK: SDK1, Bearer: bearer, ExtendedCard: true}},
		{"oauth", Options{SDK: SDK1, Bindings: []string{BindingJSONRPC, BindingGRPC}, OAuth: true, ClientID: "delegate-worker", ClientSecret: secret, ExtendedCard: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := start(t, tc.o)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, public := parseCard(t, ctx, a)
			if !public.Capabilities.ExtendedAgentCard || hasSkill(public, ClaimSkill) || !hasSkill(public, PublicSkill) {
				t.Fatalf("public card: extendedAgentCard %v, skills %v; want true and only %s", public.Capabilities.ExtendedAgentCard, skillIDs(public), PublicSkill)
			}
			token := bearer
			if tc.o.OAuth {
				tok, err := (&clientcredentials.Config{ClientID: tc.o.ClientID, ClientSecret: secret, TokenURL: a.TokenURL}).Token(ctx)
				if err != nil {
					t.Fatal(err)
				}
				token = tok.AccessToken
			}
			w := &wire{}
			c := jsonrpcClient(t, ctx, public, oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})), w)
			ext, err := c.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
			if err != nil && strings.Contains(err.Error(), "SecuritySchemeScopes") {
				// The known mismatch: read the card a2a-go could not, from
				// the wire, with this repository's card reader.
				t.Logf("%s (a2a-go: %v)", mismatchExtendedCard, err)
				ext = extendedFromWire(t, w)
			} else if err != nil {
				t.Fatalf("GetExtendedAgentCard() error = %v; wire:\n%s", err, w.since(0))
			}
			if !hasSkill(ext, ClaimSkill) || !hasSkill(ext, PublicSkill) || ext.Name != public.Name {
				t.Errorf("extended card %q skills = %v, want %s and %s", ext.Name, skillIDs(ext), PublicSkill, ClaimSkill)
			}
			if tc.o.OAuth {
				g, err := grpcClient(t, ctx, public, bearerCreds(token)).GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
				if err != nil || !hasSkill(g, ClaimSkill) {
					t.Errorf("gRPC GetExtendedAgentCard() = skills %v, %v; want %s", skillIDs(g), err, ClaimSkill)
				}
			}

			for name, hc := range map[string]*http.Client{
				"no token":    nil,
				"wrong token": oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: randomSecret(t)})),
			} {
				w := &wire{}
				_, err := jsonrpcClient(t, ctx, public, hc, w).GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
				if err == nil || !strings.Contains(err.Error(), "401") {
					t.Errorf("GetExtendedAgentCard(%s) error = %v, want HTTP 401; wire:\n%s", name, err, w.since(0))
				}
			}
			want := Counts{ExtendedCardRequests: 1, Unauthorized: 2}
			if tc.o.OAuth {
				want = Counts{ExtendedCardRequests: 2, Unauthorized: 2, TokenRequests: 1, TokenGrants: 1}
			}
			(&session{agent: a}).counts(t, ctx, want)
		})
	}
}
