package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BigNumbers are the members ScenarioBigNumbers adds to the claim_opened
// data, each written into the JSON as the exact text given here: numbers a
// float64 cannot hold (an int64 above 2^53, decimals of 30 digits).
var BigNumbers = map[string]string{
	"ledger_ref": "7615917337495251231",
	"amount":     "123456789012345678901234567890.123456789012345678901234567890",
	"ratio":      "0.100000000000000000000000000001",
	"negative":   "-9223372036854775808",
}

// SDK lines of the a2a-js agent, for Options.SDK.
const (
	// SDK1 is @a2a-js/sdk 1.3.0: A2A 1.0, card with supportedInterfaces
	// (protocolVersion "1.0").
	SDK1 = "1"
	// SDK03 is @a2a-js/sdk 0.3.14: A2A 0.3, card with url,
	// preferredTransport, additionalInterfaces (protocolVersion "0.3.0").
	SDK03 = "0.3"
)

// Bindings, for Options.Bindings.
const (
	// BindingJSONRPC is JSON-RPC, served at /a2a/jsonrpc.
	BindingJSONRPC = "jsonrpc"
	// BindingREST is HTTP+JSON, served at /a2a/rest.
	BindingREST = "rest"
	// BindingGRPC is the A2A gRPC binding (SDK1 only), served by the SDK's
	// grpcService on a port of its own; the card names it as the bare
	// target "127.0.0.1:PORT" (Agent.GRPCAddr), as the SDK's own samples do.
	BindingGRPC = "grpc"
)

// Forms of the card's securityRequirements, for Options.SecurityForm.
const (
	// SecurityFormProto is A2A 1.0's a2a.proto JSON, what the a2a-js SDK's
	// SecurityRequirement.toJSON writes:
	// [{"schemes": {"carrier-oauth": {"list": ["claims:write"]}}}].
	SecurityFormProto = "proto"
	// SecurityFormMap is the OpenAPI map form:
	// [{"carrier-oauth": ["claims:write"]}].
	SecurityFormMap = "map"
)

// Names on the card and the token endpoint of an agent with OAuth or a
// static bearer.
const (
	// OAuthScheme is the card's securitySchemes entry with Options.OAuth:
	// an oauth2SecurityScheme with one clientCredentials flow.
	OAuthScheme = "carrier-oauth"
	// BearerScheme is the card's securitySchemes entry with Options.Bearer:
	// an httpAuthSecurityScheme {"scheme": "Bearer"}.
	BearerScheme = "static-bearer"
	// OAuthScope is the one scope the token endpoint grants (also when the
	// request names none).
	OAuthScope = "claims:write"
	// TokenPath is the token endpoint's path on the agent's HTTP port.
	TokenPath = "/oauth/token"
	// ClaimSkill is the skill the scenarios use ("open-claim"); with
	// Options.ExtendedCard only the extended card lists it.
	ClaimSkill = "open-claim"
	// PublicSkill is the only skill of the public card with
	// Options.ExtendedCard.
	PublicSkill = "public-info"
)

// Scenarios, chosen by the data part field "scenario" of the first message.
// The data part may also carry "order_id" (default "A-1001") and "after_ms"
// (milliseconds, default 1000, for the Self* scenarios).
const (
	// ScenarioLostParcel (the default): SUBMITTED, WORKING, then
	// INPUT_REQUIRED with status message QuestionText; a follow-up with the
	// same taskId and contextId gives WORKING, then COMPLETED with one
	// artifact "claim_opened" whose data part is {"claim_id": "CLM-...",
	// "order_id": ...}.
	ScenarioLostParcel = "lost-parcel"
	// ScenarioInstant: a Task COMPLETED at once with the claim_opened artifact.
	ScenarioInstant = "instant"
	// ScenarioBigNumbers: as ScenarioInstant, the artifact's data also
	// holding BigNumbers, written as those exact texts.
	ScenarioBigNumbers = "big-numbers"
	// ScenarioFail: SUBMITTED, WORKING, then FAILED with FailText.
	ScenarioFail = "fail"
	// ScenarioReject: SUBMITTED, then REJECTED with RejectText.
	ScenarioReject = "reject"
	// ScenarioSlow: SUBMITTED, then WORKING until canceled; CancelTask goes
	// through the SDK's cancel path and the task ends CANCELED.
	ScenarioSlow = "slow"
	// ScenarioSelfCancel: INPUT_REQUIRED as ScenarioLostParcel, then after
	// after_ms the agent cancels the task itself (SelfCancelText).
	ScenarioSelfCancel = "self-cancel"
	// ScenarioSelfFail: INPUT_REQUIRED, then after after_ms FAILED
	// (SelfFailText).
	ScenarioSelfFail = "self-fail"
	// ScenarioSelfComplete: INPUT_REQUIRED, then after after_ms COMPLETED with
	// the claim_opened artifact, without a follow-up.
	ScenarioSelfComplete = "self-complete"
)

// Texts of the agent's status messages.
const (
	QuestionText   = "Please send a photo of the box the parcel was shipped in."
	FailText       = "the order is unknown"
	RejectText     = "claims for this skill are closed"
	SelfCancelText = "the agent gave up waiting"
	SelfFailText   = "the agent timed out"
	// ArtifactName is the name of the one artifact of a completed claim.
	ArtifactName = "claim_opened"
	// DefaultOrderID is the order id when the first message gives none.
	DefaultOrderID = "A-1001"
)

// ReadyTimeout bounds how long Start waits for the agent's ready line.
const ReadyTimeout = 30 * time.Second

// StopTimeout is how long Stop waits after SIGTERM before it kills.
const StopTimeout = 5 * time.Second

// stderrLimit bounds the kept tail of the child's stderr, in bytes.
const stderrLimit = 32 << 10

// Options configure Start.
type Options struct {
	// SDK is SDK1 ("1") or SDK03 ("0.3"); empty means SDK1.
	SDK string
	// Bindings are BindingJSONRPC, BindingREST and/or BindingGRPC (SDK1
	// only), in the order the card lists them (the first is the 0.3 card's
	// main url); empty means jsonrpc only.
	Bindings []string
	// SignJWK, when set, is a private EC P-256 JWK (JSON, with "kid"): the
	// agent signs its card with the a2a-js SDK's own signer (ES256, protected
	// header {"alg","kid","typ":"JOSE"}). SDK1 only.
	SignJWK []byte
	// Card03Fields adds the A2A 0.3 top-level fields (url,
	// preferredTransport, protocolVersion "0.3.0", additionalInterfaces) to
	// the 1.0 card, as servers that speak both versions publish. SDK1 only.
	// The endpoints still speak 1.0 only.
	Card03Fields bool
	// Push declares capabilities.pushNotifications on the card: the SDK
	// then takes push configs and pushes every later event of a task.
	Push bool
	// WorkDelay is how long the agent works between WORKING and the next
	// state, in whole milliseconds; zero or less means the agent's default,
	// 50 ms.
	WorkDelay time.Duration
	// OAuth makes the agent an OAuth 2.0 client-credentials resource
	// server with its own token endpoint (Agent.TokenURL, RFC 6749 §4.4,
	// client authentication by HTTP Basic or form fields): every A2A request
	// (JSON-RPC, REST, gRPC) needs "Authorization: Bearer TOKEN" with a
	// granted, unexpired token, else HTTP 401 (WWW-Authenticate: Bearer) or
	// gRPC UNAUTHENTICATED. The card (open) declares the scheme OAuthScheme
	// with its tokenUrl and scope OAuthScope. ClientID and ClientSecret are
	// required; the secret reaches the agent in a file, not in argv.
	OAuth bool
	// ClientID and ClientSecret are the one client the token endpoint
	// knows (OAuth only).
	ClientID, ClientSecret string
	// TokenTTL is how long a token is valid, in whole milliseconds; zero
	// means the agent's default, one hour (OAuth only).
	TokenTTL time.Duration
	// TokenURLOverride, when set, is the tokenUrl the card names instead of
	// the agent's own endpoint, which still serves (OAuth only).
	TokenURLOverride string
	// RefuseTokens makes the agent refuse every token with 401 although the
	// endpoint mints them (OAuth only).
	RefuseTokens bool
	// Bearer, when set (instead of OAuth), is a static bearer token every
	// A2A request must carry; the card declares BearerScheme. It reaches the
	// agent in a file. It must be an RFC 6750 b64token.
	Bearer string
	// SecurityForm is the form of the card's securityRequirements,
	// SecurityFormProto (the default when empty) or SecurityFormMap; SDK1
	// with OAuth or Bearer only. (An SDK03 card has the 0.3 map form,
	// "security".)
	SecurityForm string
	// ExtendedCard (SDK1, with OAuth or Bearer): the public card declares
	// capabilities.extendedAgentCard and lists only PublicSkill; the
	// extended card (GetExtendedAgentCard, served by the SDK to
	// authenticated callers) lists PublicSkill and ClaimSkill.
	ExtendedCard bool
	// Dir is the directory holding agent.mjs and node_modules; empty means
	// DefaultDir().
	Dir string
}

// Agent is a running a2a-js agent.
type Agent struct {
	// URL is the agent's base URL, "http://127.0.0.1:PORT".
	URL string
	// CardURL is URL + "/.well-known/agent-card.json".
	CardURL string
	// GRPCAddr is the gRPC target "127.0.0.1:PORT" with BindingGRPC, the
	// url of the card's GRPC interface; empty otherwise.
	GRPCAddr string
	// TokenURL is URL + TokenPath with Options.OAuth (whatever the card
	// names); empty otherwise.
	TokenURL string

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *tail
	exited  chan struct{}
	waitErr error
	files   []string // temporary files holding the JWK and secrets
	once    sync.Once
	http    *http.Client
}

// Counts are the requests the agent received since start or the last
// ResetCounts, counted at the HTTP layer before the SDK handles them.
type Counts struct {
	// Messages are SendMessage and SendStreamingMessage requests (0.3:
	// message/send, message/stream; REST: POST .../message:send|stream).
	Messages int `json:"messages"`
	// Tasks are distinct task ids the agent's task store saved.
	Tasks int `json:"tasks"`
	// Cancels are CancelTask requests (0.3: tasks/cancel).
	Cancels int `json:"cancels"`
	// GetTasks are GetTask requests (0.3: tasks/get).
	GetTasks int `json:"get_tasks"`
	// TokenRequests are POST /oauth/token requests; TokenGrants the tokens
	// it granted.
	TokenRequests int `json:"token_requests"`
	TokenGrants   int `json:"token_grants"`
	// Unauthorized are A2A requests refused for a missing, unknown,
	// expired or refused token. A refused request counts only here.
	Unauthorized int `json:"unauthorized"`
	// ExtendedCardRequests are GetExtendedAgentCard requests (JSON-RPC,
	// REST GET .../extendedAgentCard, gRPC).
	ExtendedCardRequests int `json:"extended_card_requests"`
}

// DefaultDir returns the interop directory: "interop" under the nearest
// directory, from the working directory up, that holds go.mod. It fails when
// there is none.
func DefaultDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("interop: %w", err)
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "interop"), nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("interop: no go.mod above %s", wd)
		}
		d = up
	}
}

// Available reports whether the agent can run from dir (empty: DefaultDir):
// node (v20 or later) on PATH, and dir/agent.mjs with its npm packages
// installed in dir/node_modules. The error says what is missing and how to
// install it; nil means Start can run.
func Available(dir string) error {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return err
		}
		dir = d
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return fmt.Errorf("interop: node is not on PATH (Node.js 20 or later is needed): %w", err)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return fmt.Errorf("interop: %s --version: %w", node, err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	if major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0]); err != nil || major < 20 {
		return fmt.Errorf("interop: node %s is too old: Node.js 20 or later is needed", strings.TrimSpace(string(out)))
	}
	if _, err := os.Stat(filepath.Join(dir, "agent.mjs")); err != nil {
		return fmt.Errorf("interop: no agent in %s: %w", dir, err)
	}
	for _, p := range []string{"a2a-js-1", "a2a-js-03", "express", "@grpc/grpc-js", "@bufbuild/protobuf"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			return fmt.Errorf("interop: npm package %s is not installed in %s (run `npm ci` there)", p, filepath.Join(dir, "node_modules"))
		}
	}
	return nil
}

// Start runs `node agent.mjs` in o.Dir and waits (at most ReadyTimeout, or
// until ctx ends) for its ready line. The agent lives until Stop or until
// ctx ends (then it gets SIGTERM, and SIGKILL after StopTimeout). Errors
// cover bad options, a missing node or agent, and an agent that exits or
// stays silent; they carry the tail of the agent's stderr.
func Start(ctx context.Context, o Options) (*Agent, error) {
	args, err := o.args()
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = DefaultDir(); err != nil {
			return nil, err
		}
	}
	a := &Agent{stderr: &tail{limit: stderrLimit}, exited: make(chan struct{}), http: &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
		Timeout:   30 * time.Second,
	}}
	for _, f := range []struct {
		flag, what string
		data       []byte
	}{
		{"--sign-jwk", "the JWK", o.SignJWK},
		{"--client-secret-file", "the client secret", []byte(o.ClientSecret)},
		{"--bearer-file", "the bearer token", []byte(o.Bearer)},
	} {
		if len(f.data) == 0 {
			continue
		}
		name, err := a.writeFile(f.data)
		if err != nil {
			a.cleanup()
			return nil, fmt.Errorf("interop: writing %s: %w", f.what, err)
		}
		args = append(args, f.flag, name)
	}

	cmd := exec.CommandContext(ctx, "node", append([]string{"agent.mjs"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = a.stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = StopTimeout
	// The agent also exits when this pipe closes, so it does not outlive us.
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		a.cleanup()
		return nil, fmt.Errorf("interop: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		a.cleanup()
		return nil, fmt.Errorf("interop: %w", err)
	}
	if err := cmd.Start(); err != nil {
		a.cleanup()
		return nil, fmt.Errorf("interop: starting node in %s: %w", dir, err)
	}
	a.cmd = cmd

	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r) // nothing else is expected; never block the child
	}()
	go func() {
		a.waitErr = cmd.Wait()
		close(a.exited)
	}()

	timer := time.NewTimer(ReadyTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-lines:
	case <-timer.C:
		a.Stop()
		return nil, fmt.Errorf("interop: agent not ready after %s; stderr: %s", ReadyTimeout, a.stderr.String())
	case <-ctx.Done():
		a.Stop()
		return nil, fmt.Errorf("interop: %w; stderr: %s", ctx.Err(), a.stderr.String())
	}
	var ready struct {
		URL      string `json:"url"`
		CardURL  string `json:"card_url"`
		GRPCAddr string `json:"grpc_addr"`
	}
	if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.URL == "" || ready.CardURL == "" {
		a.Stop()
		<-a.exited
		return nil, fmt.Errorf("interop: agent gave no ready line (got %q, exit: %v); stderr: %s", strings.TrimSpace(line), a.waitErr, a.stderr.String())
	}
	for _, s := range []string{ready.URL, ready.CardURL} {
		if u, err := url.Parse(s); err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
			a.Stop()
			return nil, fmt.Errorf("interop: agent announced %q, want an http://127.0.0.1 URL", s)
		}
	}
	if o.has(BindingGRPC) {
		if host, port, err := net.SplitHostPort(ready.GRPCAddr); err != nil || host != "127.0.0.1" || port == "" || port == "0" {
			a.Stop()
			return nil, fmt.Errorf("interop: agent announced gRPC at %q, want 127.0.0.1:PORT", ready.GRPCAddr)
		}
	} else if ready.GRPCAddr != "" {
		a.Stop()
		return nil, fmt.Errorf("interop: agent announced gRPC at %q without BindingGRPC", ready.GRPCAddr)
	}
	a.URL, a.CardURL, a.GRPCAddr = ready.URL, ready.CardURL, ready.GRPCAddr
	if o.OAuth {
		a.TokenURL = a.URL + TokenPath
	}
	return a, nil
}

// writeFile writes data to a new temporary file (mode 0600) that cleanup
// removes, and returns its name.
func (a *Agent) writeFile(data []byte) (string, error) {
	f, err := os.CreateTemp("", "interop-*")
	if err != nil {
		return "", err
	}
	a.files = append(a.files, f.Name())
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return f.Name(), werr
}

// String formats the options for logs and errors with the secrets
// (ClientSecret, Bearer, the private JWK) redacted, so that %v and %+v
// never print them.
func (o Options) String() string {
	type plain Options // without this method
	p := plain(o)
	for _, s := range []*string{&p.ClientSecret, &p.Bearer} {
		if *s != "" {
			*s = "[redacted]"
		}
	}
	if len(p.SignJWK) > 0 {
		p.SignJWK = []byte("[redacted]")
	}
	return fmt.Sprintf("%+v", p)
}

func (o Options) has(binding string) bool {
	for _, b := range o.Bindings {
		if b == binding {
			return true
		}
	}
	return false
}

// args turns the options into the agent's command line (without the
// files: --sign-jwk, --client-secret-file, --bearer-file).
func (o Options) args() ([]string, error) {
	sdk := o.SDK
	if sdk == "" {
		sdk = SDK1
	}
	if sdk != SDK1 && sdk != SDK03 {
		return nil, fmt.Errorf("interop: SDK %q, want %q or %q", o.SDK, SDK1, SDK03)
	}
	bindings := o.Bindings
	if len(bindings) == 0 {
		bindings = []string{BindingJSONRPC}
	}
	seen := map[string]bool{}
	for _, b := range bindings {
		if b != BindingJSONRPC && b != BindingREST && b != BindingGRPC {
			return nil, fmt.Errorf("interop: binding %q, want %q, %q or %q", b, BindingJSONRPC, BindingREST, BindingGRPC)
		}
		if b == BindingGRPC && sdk != SDK1 {
			return nil, errors.New("interop: BindingGRPC needs SDK 1 (a2a-js 1.x server/grpc)")
		}
		if seen[b] {
			return nil, fmt.Errorf("interop: binding %q given twice", b)
		}
		seen[b] = true
	}
	if sdk != SDK1 && (len(o.SignJWK) > 0 || o.Card03Fields) {
		return nil, errors.New("interop: SignJWK and Card03Fields need SDK 1 (a2a-js 0.3.14 has no card signer)")
	}
	if o.OAuth {
		if o.ClientID == "" || o.ClientSecret == "" {
			return nil, errors.New("interop: OAuth needs ClientID and ClientSecret")
		}
		if o.Bearer != "" {
			return nil, errors.New("interop: OAuth and Bearer exclude each other")
		}
		if o.TokenTTL < 0 || (o.TokenTTL > 0 && o.TokenTTL < time.Millisecond) {
			return nil, fmt.Errorf("interop: TokenTTL %s, want zero or at least 1ms", o.TokenTTL)
		}
		if o.TokenURLOverride != "" {
			if u, err := url.Parse(o.TokenURLOverride); err != nil || !u.IsAbs() {
				return nil, fmt.Errorf("interop: TokenURLOverride %q is not an absolute URL", o.TokenURLOverride)
			}
		}
	} else if o.ClientID != "" || o.ClientSecret != "" || o.TokenTTL != 0 || o.TokenURLOverride != "" || o.RefuseTokens {
		return nil, errors.New("interop: ClientID, ClientSecret, TokenTTL, TokenURLOverride and RefuseTokens need OAuth")
	}
	auth := o.OAuth || o.Bearer != ""
	if o.SecurityForm != "" {
		if o.SecurityForm != SecurityFormProto && o.SecurityForm != SecurityFormMap {
			return nil, fmt.Errorf("interop: SecurityForm %q, want %q or %q", o.SecurityForm, SecurityFormProto, SecurityFormMap)
		}
		if !auth || sdk != SDK1 {
			return nil, errors.New("interop: SecurityForm needs SDK 1 and OAuth or Bearer")
		}
	}
	if o.ExtendedCard && (!auth || sdk != SDK1) {
		return nil, errors.New("interop: ExtendedCard needs SDK 1 and OAuth or Bearer")
	}
	args := []string{"--sdk", sdk, "--bindings", strings.Join(bindings, ","), "--port", "0"}
	if o.Card03Fields {
		args = append(args, "--card-03-fields")
	}
	if o.Push {
		args = append(args, "--push")
	}
	if o.WorkDelay > 0 {
		args = append(args, "--work-ms", strconv.FormatInt(o.WorkDelay.Milliseconds(), 10))
	}
	if o.OAuth {
		args = append(args, "--oauth", "--client-id", o.ClientID)
		if o.TokenTTL > 0 {
			args = append(args, "--token-ttl-ms", strconv.FormatInt(o.TokenTTL.Milliseconds(), 10))
		}
		if o.TokenURLOverride != "" {
			args = append(args, "--token-url-override", o.TokenURLOverride)
		}
		if o.RefuseTokens {
			args = append(args, "--refuse-tokens")
		}
	}
	if o.SecurityForm != "" {
		args = append(args, "--security-form", o.SecurityForm)
	}
	if o.ExtendedCard {
		args = append(args, "--extended-card")
	}
	return args, nil
}

// Counts reads the agent's counters (GET /counts). Errors are transport
// errors, a status other than 200, or a body that is not Counts.
func (a *Agent) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := a.call(ctx, http.MethodGet, "/counts", &c)
	return c, err
}

// ResetCounts zeroes the agent's counters (POST /counts/reset). Errors are
// as for Counts.
func (a *Agent) ResetCounts(ctx context.Context) error {
	return a.call(ctx, http.MethodPost, "/counts/reset", &Counts{})
}

func (a *Agent) call(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, a.URL+path, nil)
	if err != nil {
		return fmt.Errorf("interop: %w", err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("interop: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return fmt.Errorf("interop: %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("interop: %s %s: HTTP %d: %s", method, path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("interop: %s %s: %w", method, path, err)
	}
	return nil
}

// Stderr returns the kept tail of the agent's stderr (at most 32 KiB).
func (a *Agent) Stderr() string { return a.stderr.String() }

// Stop ends the agent: SIGTERM (and stdin closed), then SIGKILL after
// StopTimeout; it returns once the process has exited. It is safe to call
// more than once.
func (a *Agent) Stop() {
	a.once.Do(func() {
		defer a.cleanup()
		if a.cmd == nil || a.cmd.Process == nil {
			return
		}
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		_ = a.stdin.Close()
		select {
		case <-a.exited:
		case <-time.After(StopTimeout):
			_ = a.cmd.Process.Kill()
			<-a.exited
		}
	})
}

func (a *Agent) cleanup() {
	for _, f := range a.files {
		os.Remove(f)
	}
	a.http.CloseIdleConnections()
}

// tail keeps the last limit bytes written to it.
type tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	cut   bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(empty)"
	}
	if t.cut {
		return "..." + s
	}
	return s
}
