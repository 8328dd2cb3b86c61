package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jwt"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"golang.org/x/oauth2/clientcredentials"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/codec"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/mcp"
)

// mcpTemplates loads the example templates file (mcp/examples) with its
// agent at base, and adds a template whose scenario the model picks.
func mcpTemplates(t *testing.T, base string) []mcp.Template {
	t.Helper()
	ts, err := mcp.LoadTemplates("../mcp/examples/templates.json")
	if err != nil {
		t.Fatalf("LoadTemplates(example) error = %v", err)
	}
	for i := range ts {
		ts[i].AgentCardURL = base + "/.well-known/agent-card.json"
	}
	scenario := mcp.Template{
		Name: "claims_scenario", Description: "the claims agent in a scenario", AgentCardURL: base + "/.well-known/agent-card.json",
		Skill: "open-claim", Purpose: "mcp test", AllowedOutputs: []string{"claim_opened"}, DeadlineAfter: "10m",
		Text:       "Order {{order_id}}: scenario {{scenario}}",
		Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"scenario":{"enum":["instant","slow","lost-parcel","auth","two-questions"]}},"required":["order_id","scenario"]}`),
		Answer:     "human",
	}
	model := scenario
	model.Name, model.Answer = "claims_scenario_model", "model"
	return append(ts, scenario, model)
}

// mcpServer is a Server of the test's Temporal, for actor ("" for HTTP).
func (e *env) mcpServer(t *testing.T, actor string) *mcp.Server {
	t.Helper()
	s, err := mcp.New(mcp.Options{Client: e.c, Templates: mcpTemplates(t, e.base), Actor: actor, Burst: 1000, Rate: 1000})
	if err != nil {
		t.Fatalf("mcp.New() error = %v", err)
	}
	return s
}

// mcp2025 is the MCP version of sessions (initialize, Mcp-Session-Id,
// elicitation/create, resources/subscribe): a test of what a session
// does asks for it. A go-sdk client asks for 2026-07-28 otherwise.
const mcp2025 = "2025-11-25"

// stdioSession connects a go-sdk client to s over in-memory transports
// (the stdio server's code path: a fixed actor), at the go-sdk's latest
// MCP version (2026-07-28).
func stdioSession(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return stdioSessionAt(t, s, opts, "")
}

// stdioSessionAt is stdioSession with the client asking for MCP version
// ("": the go-sdk's latest).
func stdioSessionAt(t *testing.T, s *mcp.Server, opts *sdk.ClientOptions, version string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := s.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect() error = %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, mcp.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s) error = %v", name, err)
	}
	var r mcp.Result
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: structuredContent %s: %v", name, b, err)
		}
	}
	return res, r
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// refused asserts a tool error whose text holds every want.
func refused(t *testing.T, res *sdk.CallToolResult, want ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", text(res))
	}
	for _, w := range want {
		if !strings.Contains(text(res), w) {
			t.Fatalf("tool error %q does not say %q", text(res), w)
		}
	}
}

func (e *env) starterOf(t *testing.T, id string) string {
	t.Helper()
	desc, err := e.c.DescribeWorkflowExecution(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	var s string
	_ = json.Unmarshal(desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[contracts.SearchAttributeDelegationStarter].GetData(), &s)
	return s
}

func (e *env) stateOf(t *testing.T, id string) contracts.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := dclient.Get(e.c, id).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestMCPHumanAnswersThroughElicitation: list the tools; start from the
// example template, wait; the agent's question comes through elicitation,
// the human's answer is sent with answered_by the actor, the delegation
// completes; the starter is recorded.
func TestMCPHumanAnswersThroughElicitation(t *testing.T) {
	e := setup(t)
	var mu sync.Mutex
	var asked []string
	cs := stdioSession(t, e.mcpServer(t, "alice"), &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			// The form the interface fixes: one required string, answer.
			if b, _ := json.Marshal(req.Params.RequestedSchema); string(b) != `{"properties":{"answer":{"type":"string"}},"required":["answer"],"type":"object"}` || req.Params.Mode != "form" {
				return nil, fmt.Errorf("elicitation mode %q schema %s", req.Params.Mode, b)
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "A photo of the box is attached."}}, nil
		},
	})

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, n := range []string{"open_parcel_claim", "open_parcel_claim_auto", "claims_scenario", mcp.ToolStatus, mcp.ToolList, mcp.ToolCancel, mcp.ToolAnswer} {
		if byName[n] == nil {
			t.Fatalf("tool %s not listed (got %d tools)", n, len(tools.Tools))
		}
	}
	tl := byName["open_parcel_claim"]
	if a := tl.Annotations; a == nil || a.ReadOnlyHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Fatalf("open_parcel_claim annotations = %+v, want readOnlyHint false, openWorldHint true", tl.Annotations)
	}
	if a := byName[mcp.ToolCancel].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Fatalf("delegation_cancel annotations = %+v, want destructiveHint true", a)
	}
	if a := byName[mcp.ToolStatus].Annotations; a == nil || !a.ReadOnlyHint {
		t.Fatalf("delegation_status annotations = %+v, want readOnlyHint true", a)
	}
	schema, _ := json.Marshal(tl.InputSchema)
	for _, w := range []string{`"additionalProperties":false`, `"wait_seconds"`, `"order_id"`} {
		if !strings.Contains(string(schema), w) {
			t.Fatalf("input schema %s lacks %s", schema, w)
		}
	}

	res, r := call(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-1001", "wait_seconds": 30})
	if res.IsError {
		t.Fatalf("start refused: %s", text(res))
	}
	if !strings.HasPrefix(r.LocalWorkflowID, "mcp.open_parcel_claim.") || r.Template != "open_parcel_claim" {
		t.Fatalf("result = %+v", r)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "Please send a photo of the box") || !strings.Contains(asked[0], "not instructions") {
		t.Fatalf("elicitation messages = %q", asked)
	}
	if got := e.starterOf(t, r.LocalWorkflowID); got != "alice" {
		t.Fatalf("DelegationStarter = %q, want alice", got)
	}
	// The answer went as alice's, and the delegation completes.
	waitFor(t, "completed", 60*time.Second, func() (bool, string) {
		_, r := call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": r.LocalWorkflowID})
		return r.Outcome != nil && r.Outcome.Status == contracts.StatusCompleted, fmt.Sprintf("%+v", r)
	})
	st := e.stateOf(t, r.LocalWorkflowID)
	if len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "alice" || st.Answers[0].Text != "A photo of the box is attached." {
		t.Fatalf("answers = %+v, want one by alice", st.Answers)
	}

	// delegation_list shows it, with its template.
	res, _ = call(t, cs, mcp.ToolList, map[string]any{})
	b, _ := json.Marshal(res.StructuredContent)
	var lr mcp.ListResult
	_ = json.Unmarshal(b, &lr)
	if len(lr.Delegations) != 1 || lr.Delegations[0].LocalWorkflowID != r.LocalWorkflowID || lr.Delegations[0].Template != "open_parcel_claim" {
		t.Fatalf("list = %s", b)
	}
}

// TestMCPModelAnswers: a "model" template's question is answered through
// delegation_answer, recorded as "alice (model)"; a "human" template's
// is refused there, and a declined elicitation leaves it waiting.
func TestMCPModelAnswers(t *testing.T) {
	e := setup(t)
	declined := 0
	cs := stdioSession(t, e.mcpServer(t, "alice"), &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			declined++
			return &sdk.ElicitResult{Action: "decline"}, nil
		},
	})

	// The model template: no elicitation, the question comes back quoted.
	res, r := call(t, cs, "open_parcel_claim_auto", map[string]any{"order_id": "A-2002", "wait_seconds": 30})
	if res.IsError || r.Question == nil {
		t.Fatalf("start: %s (%+v), want the agent's question", text(res), r)
	}
	if declined != 0 {
		t.Fatal("a model template's question was elicited")
	}
	if r.Question.Source != "remote_agent" || !strings.Contains(r.Question.Text, "photo of the box") || !strings.Contains(text(res), "not instructions") {
		t.Fatalf("question = %+v, text %q", r.Question, text(res))
	}
	// An answer for another round than the pending one is refused, and
	// nothing is sent; the round read is answered.
	stale, _ := call(t, cs, mcp.ToolAnswer, map[string]any{"local_workflow_id": r.LocalWorkflowID, "text": "old", "round": r.Question.Round + 1})
	refused(t, stale, `argument "round"`, "is pending")
	res, r = call(t, cs, mcp.ToolAnswer, map[string]any{"local_workflow_id": r.LocalWorkflowID, "text": "Photo sent.", "data": map[string]any{"photo": "box.jpg"}, "round": r.Question.Round})
	if res.IsError {
		t.Fatalf("delegation_answer refused: %s", text(res))
	}
	waitFor(t, "completed", 60*time.Second, func() (bool, string) {
		_, r := call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": r.LocalWorkflowID, "wait_seconds": 5})
		return r.Outcome != nil && r.Outcome.Status == contracts.StatusCompleted, fmt.Sprintf("%+v", r)
	})
	if st := e.stateOf(t, r.LocalWorkflowID); len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "alice (model)" {
		t.Fatalf("answers = %+v, want one by %q", st.Answers, "alice (model)")
	}

	// The human template: elicitation declined, the question stays, and
	// the model may not answer it.
	res, r = call(t, cs, "open_parcel_claim", map[string]any{"order_id": "A-3003", "wait_seconds": 30})
	if res.IsError || r.Question == nil || declined != 1 || !strings.Contains(text(res), "declined") {
		t.Fatalf("start: %s (%+v), declined %d", text(res), r, declined)
	}
	res, _ = call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": r.LocalWorkflowID})
	if declined != 1 || r.Question == nil || !strings.Contains(text(res), "declined this question") {
		t.Fatalf("status after a decline: %s, declined %d; want the question not asked again", text(res), declined)
	}
	res, _ = call(t, cs, mcp.ToolAnswer, map[string]any{"local_workflow_id": r.LocalWorkflowID, "text": "I am the human, trust me"})
	refused(t, res, "delegation_answer is refused", `"human"`)
	if st := e.stateOf(t, r.LocalWorkflowID); st.Question == nil || len(st.Answers) != 0 {
		t.Fatalf("state = %+v, want the question still pending and no answer", st)
	}
}

type bearer struct {
	mu    sync.Mutex
	token string
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	b.mu.Lock()
	r.Header.Set("Authorization", "Bearer "+b.token)
	b.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects a go-sdk client over Streamable HTTP with token.
func httpSession(t *testing.T, url, token string) *sdk.ClientSession {
	t.Helper()
	return httpSessionWith(t, url, token, nil)
}

func httpSessionWith(t *testing.T, url, token string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	return httpSessionAt(t, url, token, opts, "")
}

// httpSessionAt is httpSessionWith with the client asking for MCP version
// ("": the go-sdk's latest, 2026-07-28: stateless requests, no session).
func httpSessionAt(t *testing.T, url, token string, opts *sdk.ClientOptions, version string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearer{token: token}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-http", Version: "1"}, opts).Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect(%s) error = %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func writeTokens(t *testing.T, path string, entries ...string) {
	t.Helper()
	doc := `{"tokens": [` + strings.Join(entries, ",") + `]}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMCPHTTPOwnershipAndRevocation: over Streamable HTTP with a tokens
// file, bob cannot read, answer or cancel alice's delegation (it is "not
// found", as a missing one), does not list it, and a token removed from
// the file is refused on the next request of the same session.
func TestMCPHTTPOwnershipAndRevocation(t *testing.T) {
	e := setup(t)
	path := filepath.Join(t.TempDir(), "tokens.json")
	aliceTok, bobTok := "alice-token-0123456789", "bob-token-0123456789ab"
	sum := sha256.Sum256([]byte(bobTok))
	alice := `{"actor": "alice", "token": "` + aliceTok + `"}`
	bob := `{"actor": "bob", "sha256": "` + hex.EncodeToString(sum[:]) + `"}`
	writeTokens(t, path, alice, bob)
	tokens, err := mcp.NewTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h, err := e.mcpServer(t, "").HTTPHandler(mcp.HTTPOptions{Verify: mcp.Verifier(tokens, nil), MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/mcp", h)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)

	// No token, or an unknown one: 401 with a Bearer challenge.
	for _, auth := range []string{"", "Bearer nope-nope-nope-nope"} {
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("Authorization %q: status %d, WWW-Authenticate %q; want 401 with Bearer", auth, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	// Elicitation over Streamable HTTP: the question reaches alice's human
	// in the middle of the tool call, her answer is recorded as hers.
	ah := httpSessionWith(t, hs.URL+"/mcp", aliceTok, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "photo over HTTP"}}, nil
		},
	})
	res, r := call(t, ah, "open_parcel_claim", map[string]any{"order_id": "A-4005", "wait_seconds": 30})
	if res.IsError || !strings.Contains(text(res), "answered by alice through an input request") {
		t.Fatalf("start over HTTP: %s", text(res))
	}
	if st := e.stateOf(t, r.LocalWorkflowID); len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "alice" || st.Answers[0].Text != "photo over HTTP" {
		t.Fatalf("answers = %+v", st.Answers)
	}

	as := httpSession(t, hs.URL+"/mcp", aliceTok)
	bs := httpSession(t, hs.URL+"/mcp", bobTok)
	res, r = call(t, as, "claims_scenario", map[string]any{"order_id": "A-4004", "scenario": "slow", "wait_seconds": 2})
	if res.IsError {
		t.Fatalf("alice's start: %s", text(res))
	}
	id := r.LocalWorkflowID
	if got := e.starterOf(t, id); got != "alice" {
		t.Fatalf("DelegationStarter = %q", got)
	}

	missing, _ := call(t, bs, mcp.ToolStatus, map[string]any{"local_workflow_id": "mcp.claims_scenario.00000000-0000-0000-0000-000000000000"})
	refused(t, missing, "not found")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{mcp.ToolStatus, map[string]any{"local_workflow_id": id}},
		{mcp.ToolAnswer, map[string]any{"local_workflow_id": id, "text": "hi"}},
		{mcp.ToolCancel, map[string]any{"local_workflow_id": id, "reason": "mine now"}},
	} {
		res, _ := call(t, bs, c.tool, c.args)
		refused(t, res, "not found")
		if strings.Replace(text(res), id, "X", 1) != strings.Replace(text(missing), "mcp.claims_scenario.00000000-0000-0000-0000-000000000000", "X", 1) {
			t.Fatalf("%s: %q differs from a missing id's %q", c.tool, text(res), text(missing))
		}
	}
	res, _ = call(t, bs, mcp.ToolList, map[string]any{})
	if b, _ := json.Marshal(res.StructuredContent); strings.Contains(string(b), id) {
		t.Fatalf("bob's list shows alice's delegation: %s", b)
	}
	if ws, _ := dclient.Get(e.c, id).WorkflowStatus(context.Background()); ws != "running" {
		t.Fatalf("alice's delegation is %s after bob's attempts", ws)
	}

	// Revoke bob: the very next request of his session is refused.
	writeTokens(t, path, alice)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := bs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolList, Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("bob's revoked token: error %v, want 401 Unauthorized", err)
	}

	// Alice cancels hers.
	res, r = call(t, as, mcp.ToolCancel, map[string]any{"local_workflow_id": id, "reason": "customer found it"})
	if res.IsError {
		t.Fatalf("alice's cancel: %s", text(res))
	}
	waitFor(t, "canceled", 30*time.Second, func() (bool, string) {
		_, r := call(t, as, mcp.ToolStatus, map[string]any{"local_workflow_id": id})
		return r.Outcome != nil && r.Outcome.Status == contracts.StatusCanceled, fmt.Sprintf("%+v", r)
	})
}

// issuer is a real OAuth 2.0 authorization server on loopback: OpenID
// discovery, a JWKS, and a token endpoint (client_credentials, the
// client's id becomes sub) that signs RS256 JWT access tokens for aud (or
// for the form's audience, or for its resource: RFC 8707, what an MCP
// client on the TypeScript SDK asks for).
func issuer(t *testing.T, aud string) *httptest.Server {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.FromRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	_ = priv.Set(jwk.KeyIDKey, "test-key")
	_ = priv.Set(jwk.AlgorithmKey, jwa.RS256)
	pub, err := priv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks", "token_endpoint": srv.URL + "/token",
			"authorization_endpoint": srv.URL + "/authorize", "id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(set) })
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || secret != id+"-secret" || r.FormValue("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		audience := aud
		if r.FormValue("audience") != "" {
			audience = r.FormValue("audience")
		} else if r.FormValue("resource") != "" {
			audience = r.FormValue("resource")
		}
		tok, err := jwt.NewBuilder().Issuer(srv.URL).Subject(id).Audience([]string{audience}).
			IssuedAt(time.Now()).Expiration(time.Now().Add(10 * time.Minute)).Build()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		signed, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256, priv))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": string(signed), "token_type": "Bearer", "expires_in": 600})
	})
	return srv
}

// TestMCPOAuthResourceServer: with --issuer/--audience, a JWT the issuer's
// token endpoint signed is accepted and its sub is the actor; a token for
// another audience is refused with 401.
func TestMCPOAuthResourceServer(t *testing.T) {
	e := setup(t)
	iss := issuer(t, "delegate-mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	oidc, err := mcp.NewOIDC(ctx, iss.URL, "delegate-mcp")
	if err != nil {
		t.Fatalf("NewOIDC() error = %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	mux, err := e.mcpServer(t, "").Mux(mcp.HTTPOptions{ResourceURL: base + "/mcp", Verify: mcp.Verifier(nil, oidc), Issuer: iss.URL, LoopbackOrigins: true, MaxBody: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	hs.Start()
	t.Cleanup(hs.Close)

	// RFC 9728: a client learns the issuer from the resource's metadata.
	resp, err := http.Get(hs.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&prm)
	resp.Body.Close()
	if err != nil || prm.Resource != hs.URL+"/mcp" || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != iss.URL {
		t.Fatalf("protected resource metadata = %+v (%v)", prm, err)
	}

	token := func(aud string) string {
		cc := clientcredentials.Config{ClientID: "carol", ClientSecret: "carol-secret", TokenURL: iss.URL + "/token"}
		if aud != "" {
			cc.EndpointParams = map[string][]string{"audience": {aud}}
		}
		tok, err := cc.Token(ctx)
		if err != nil {
			t.Fatalf("token endpoint: %v", err)
		}
		return tok.AccessToken
	}
	cs := httpSession(t, hs.URL+"/mcp", token(""))
	res, r := call(t, cs, "claims_scenario", map[string]any{"order_id": "A-5005", "scenario": "instant", "wait_seconds": 20})
	if res.IsError {
		t.Fatalf("start: %s", text(res))
	}
	if got := e.starterOf(t, r.LocalWorkflowID); got != "carol" {
		t.Fatalf("DelegationStarter = %q, want the token's sub carol", got)
	}
	if r.Outcome == nil || r.Outcome.Status != contracts.StatusCompleted {
		t.Fatalf("result = %+v, want completed within wait_seconds", r)
	}

	req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+token("someone-else"))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+hs.URL+"/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("a token for another audience: status %d, WWW-Authenticate %q; want 401 pointing at the metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestMCPResourceSubscription: a delegation is resource delegation://ID;
// its owner subscribes and is notified when it changes (here: the agent
// asks its question), another actor can neither read nor subscribe.
func TestMCPResourceSubscription(t *testing.T) {
	// The agent works 2 s before it asks: the subscription, made right
	// after the start, is there before the change it is told of (a
	// subscriber is told of changes from its subscription on).
	e := setup(t, func(o *options) { o.agent = claimsagent.Config{WorkDelay: 2 * time.Second} })
	updated := make(chan string, 16)
	// resources/subscribe is MCP 2025-11-25's (at 2026-07-28 the go-sdk
	// client's Subscribe opens a subscriptions/listen and returns before
	// the server answers: a refusal is not seen).
	cs := stdioSessionAt(t, e.mcpServer(t, "alice"), &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	}, mcp2025)
	res, r := call(t, cs, "open_parcel_claim_auto", map[string]any{"order_id": "A-6006"})
	if res.IsError || r.Question != nil {
		t.Fatalf("start: %s", text(res))
	}
	uri := "delegation://" + r.LocalWorkflowID
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("Subscribe(%s) error = %v", uri, err)
	}
	var got mcp.Result
	for got.Question == nil {
		select {
		case u := <-updated:
			if u != uri {
				t.Fatalf("notified of %s, want %s", u, uri)
			}
		case <-ctx.Done():
			t.Fatalf("no notification that the agent asks (last read %+v)", got)
		}
		rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("ReadResource error = %v", err)
		}
		if err := json.Unmarshal([]byte(rr.Contents[0].Text), &got); err != nil {
			t.Fatal(err)
		}
	}
	if got.Question.Source != "remote_agent" || got.LocalWorkflowID != r.LocalWorkflowID {
		t.Fatalf("resource = %+v", got)
	}

	bob := stdioSessionAt(t, e.mcpServer(t, "bob"), nil, mcp2025)
	if _, err := bob.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("bob reads alice's delegation: error %v, want not found", err)
	}
	if err := bob.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err == nil {
		t.Fatal("bob subscribed to alice's delegation")
	}
}

// TestMCPAuthRequiredNeverThroughAModel: AUTH_REQUIRED is returned as a
// question marked auth-required, never elicited, and delegation_answer
// refuses it even for a "model" template: credentials never pass through
// a model.
func TestMCPAuthRequiredNeverThroughAModel(t *testing.T) {
	e := setup(t)
	elicited := 0
	cs := stdioSession(t, e.mcpServer(t, "alice"), &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			elicited++
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "hunter2"}}, nil
		},
	})
	for _, tmpl := range []string{"claims_scenario", "claims_scenario_model"} {
		res, r := call(t, cs, tmpl, map[string]any{"order_id": "A-7007", "scenario": "auth", "wait_seconds": 30})
		if res.IsError || r.Question == nil || r.Question.State != "auth-required" || !strings.Contains(text(res), "asks for authentication") {
			t.Fatalf("%s: %s (%+v), want an auth-required question", tmpl, text(res), r.Question)
		}
		res, _ = call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": r.LocalWorkflowID})
		if res.IsError {
			t.Fatalf("status: %s", text(res))
		}
		if tmpl == "claims_scenario_model" {
			res, _ = call(t, cs, mcp.ToolAnswer, map[string]any{"local_workflow_id": r.LocalWorkflowID, "text": "Bearer hunter2"})
			refused(t, res, "authentication", "credentials never pass through a model")
		}
		if st := e.stateOf(t, r.LocalWorkflowID); len(st.Answers) != 0 {
			t.Fatalf("%s: answers = %+v, want none", tmpl, st.Answers)
		}
	}
	if elicited != 0 {
		t.Fatalf("AUTH_REQUIRED was elicited %d times", elicited)
	}
}

// TestMCPChecksStarterAttribute: delegate mcp refuses to serve a namespace
// without the search attribute DelegationStarter (every start would fail).
func TestMCPChecksStarterAttribute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Config{Memory: true, UIPort: -1, LogLevel: "fatal",
		SearchAttributes: []string{contracts.SearchAttributeA2AState, contracts.SearchAttributeA2AAgent, contracts.SearchAttributeA2ARemoteTaskID, contracts.SearchAttributeA2APurpose}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := mcp.CheckSearchAttribute(ctx, c, srv.Namespace()); !errors.Is(err, mcp.ErrNoStarterAttribute) {
		t.Fatalf("CheckSearchAttribute(without it) = %v, want ErrNoStarterAttribute", err)
	}
	e := setup(t)
	if err := mcp.CheckSearchAttribute(ctx, e.c, e.srv.Namespace()); err != nil {
		t.Fatalf("CheckSearchAttribute(delegate dev's names) = %v", err)
	}
}

// TestMCPWithEncryptionKeys: with encryption keys (the connection's data
// converter), the contract an MCP start sends is sealed in history, and
// the adapter still reads the question and answers it.
func TestMCPWithEncryptionKeys(t *testing.T) {
	keys := testKeys(t, "k1:"+key(7))
	e := setup(t, func(o *options) { o.keys = keys })
	cs := stdioSession(t, e.mcpServer(t, "alice"), nil)
	res, r := call(t, cs, "open_parcel_claim_auto", map[string]any{"order_id": "A-8008", "wait_seconds": 30})
	if res.IsError || r.Question == nil || !strings.Contains(r.Question.Text, "photo") {
		t.Fatalf("start: %s", text(res))
	}
	it := e.c.GetWorkflowHistory(context.Background(), r.LocalWorkflowID, "", false, 0)
	ev, err := it.Next()
	if err != nil {
		t.Fatal(err)
	}
	in := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()
	if len(in) == 0 || string(in[0].GetMetadata()["encoding"]) != codec.MetadataEncoding || strings.Contains(string(in[0].GetData()), "A-8008") {
		t.Fatalf("the started event's input is not sealed: %v", in)
	}
	res, _ = call(t, cs, mcp.ToolAnswer, map[string]any{"local_workflow_id": r.LocalWorkflowID, "text": "sealed photo"})
	if res.IsError {
		t.Fatalf("answer: %s", text(res))
	}
	if st := e.stateOf(t, r.LocalWorkflowID); len(st.Answers) != 1 || st.Answers[0].AnsweredBy != "alice (model)" {
		t.Fatalf("answers = %+v", st.Answers)
	}
}
