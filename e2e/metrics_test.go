package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// metricsWorker is a `delegate worker --metrics-addr` process: its
// /metrics address and its log (--log-format json).
type metricsWorker struct {
	addr string
	log  *testutil.LockedBuffer
}

// scrape reads the worker's /metrics, parsed.
func (w *metricsWorker) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + w.addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value is the value of the series of name with exactly labels (a
// counter's or a gauge's value, a histogram's count); 0 when absent.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// sum adds the values of the series of name whose labels include labels.
func sum(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	total := 0.0
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			if have[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

// waitMetric waits until cond holds of a scrape.
func (w *metricsWorker) waitMetric(t *testing.T, what string, cond func(map[string]*dto.MetricFamily) (bool, string)) map[string]*dto.MetricFamily {
	t.Helper()
	var fams map[string]*dto.MetricFamily
	waitFor(t, what, 30*time.Second, func() (bool, string) {
		fams = w.scrape(t)
		return cond(fams)
	})
	return fams
}

// startMetricsWorker runs `delegate worker` against e's server with
// --metrics-addr on a free port, --waiting-interval 1s and JSON logs.
func startMetricsWorker(t *testing.T, ctx context.Context, e *env, extra ...string) *metricsWorker {
	t.Helper()
	bin := buildDelegate(t, ctx, t.TempDir())
	args := append([]string{"worker", "--address", e.srv.FrontendAddr(), "--namespace", e.srv.Namespace(),
		"--metrics-addr", "127.0.0.1:0", "--waiting-interval", "1s", "--log-format", "json",
		"--poll-initial", "50ms", "--poll-max", "500ms"}, extra...)
	cmd := exec.Command(bin, args...)
	logs := &testutil.LockedBuffer{}
	cmd.Stderr, cmd.Stdout = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("--- worker log (tail) ---\n%s", tail(logs.String(), 4000))
		}
	})
	w := &metricsWorker{log: logs}
	waitFor(t, "the worker's metrics address", 60*time.Second, func() (bool, string) {
		for _, l := range logLines(logs.String()) {
			if l["msg"] == "metrics served" {
				w.addr, _ = l["addr"].(string)
			}
			if l["msg"] == "worker started" && w.addr != "" {
				return true, ""
			}
		}
		return false, tail(logs.String(), 500)
	})
	return w
}

// logLines are the worker's JSON log lines, decoded.
func logLines(s string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// serveAgent starts another claims agent (cfg.BaseURL is set) until the
// test ends.
func serveAgent(t *testing.T, ctx context.Context, cfg claimsagent.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL = "http://" + ln.Addr().String()
	a := claimsagent.New(cfg)
	go func() { _ = a.Serve(ctx, ln) }()
	return cfg.BaseURL
}

// tempJSON writes v into a new file name and returns its path.
func tempJSON(t *testing.T, name string, v any) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	writeJSON(t, p, v)
	return p
}

func withScenario(d contracts.Delegation, scenario string) contracts.Delegation {
	d.Message.Data = json.RawMessage(fmt.Sprintf(`{"order_id":"A-1001","scenario":%q}`, scenario))
	return d
}

// TestWatchingDelegate: a `delegate worker --metrics-addr` process serves
// delegate's metrics on /metrics (docs/operations.md, "Watching
// delegate"): one delegation of each kind and the counters after each
// (counted once, also after the worker replays the ended workflow for a
// query); a secured agent whose token endpoint refuses; a signed card
// that does not verify; the waiting gauges following a delegation into
// input-required and out again, and into unknown-outcome; no delegation
// or task id in any label value; the JSON log lines of a delegation carry
// its ids and never a secret.
func TestWatchingDelegate(t *testing.T) {
	const clientSecret = "cl1ent-s3cret-never-logged"
	const bearer = "agent-bearer-never-logged"
	// The main agent: its sends whose order is "UNK-1" are held (the
	// client gives up: unknown outcome), and it serves no ListTasks (so
	// the unknown outcome waits for an operator).
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	e := setup(t, func(o *options) {
		o.noWorker = true
		o.proxy = func(agentURL string) http.Handler {
			return withoutListTasks(interceptRPCs(agentURL, []string{"SendMessage", "SendStreamingMessage"}, func(w http.ResponseWriter, r *http.Request, body []byte, forward http.Handler) {
				if strings.Contains(string(body), "UNK-1") {
					select {
					case <-r.Context().Done():
					case <-stop:
					}
					return
				}
				forward.ServeHTTP(w, r)
			}), func() bool { return true })
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A secured agent whose token endpoint refuses the worker's client.
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
	}))
	t.Cleanup(tokens.Close)
	secured := serveAgent(t, ctx, claimsagent.Config{RequireBearer: bearer})
	// A signed agent whose card the trust store does not verify: it
	// trusts another key for the origin.
	signer, other := signingKey(t), signingKey(t)
	signed := serveAgent(t, ctx, claimsagent.Config{SignKey: signer, KeyID: "claims-2026"})
	pub, err := jwk.PublicKeyOf(other)
	if err != nil {
		t.Fatal(err)
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	jwks, _ := json.Marshal(set)
	creds := tempJSON(t, "credentials.json", map[string]any{"origins": map[string]any{
		secured: map[string]any{"oauth2": map[string]any{"token_url": tokens.URL + "/oauth/token", "client_id": "delegate-worker", "client_secret": clientSecret}},
	}})
	trust := tempJSON(t, "trust.json", map[string]any{"agents": map[string]any{signed: map[string]any{"jwks": json.RawMessage(jwks)}}})
	w := startMetricsWorker(t, ctx, e, "--credentials", creds, "--trust", trust)

	origin := strings.TrimPrefix(e.base, "http://")
	agentOrigin := "http://" + origin
	var ids []string
	var taskIDs []string
	// ended runs d to its Outcome and checks that the counter of its
	// status and category went up by exactly one, also after the worker
	// replayed the ended workflow (a query on a closed run replays it).
	ended := func(t *testing.T, run func() contracts.Outcome) contracts.Outcome {
		t.Helper()
		before := w.scrape(t)
		out := run()
		ids = append(ids, out.LocalWorkflowID)
		if out.RemoteTaskID != "" {
			taskIDs = append(taskIDs, out.RemoteTaskID)
		}
		cat := ""
		if out.Error != nil {
			cat = string(out.Error.Category)
		}
		labels := map[string]string{"status": string(out.Status), "category": cat}
		want := value(before, "delegate_delegations_ended_total", labels) + 1
		w.waitMetric(t, fmt.Sprintf("delegate_delegations_ended_total%v = %v", labels, want), func(f map[string]*dto.MetricFamily) (bool, string) {
			got := value(f, "delegate_delegations_ended_total", labels)
			return got == want, fmt.Sprint(got)
		})
		if _, err := dclient.Get(e.c, out.LocalWorkflowID).State(ctx); err != nil {
			t.Fatalf("query of the ended delegation: %v", err)
		}
		if got := value(w.scrape(t), "delegate_delegations_ended_total", labels); got != want {
			t.Errorf("after a replay, delegate_delegations_ended_total%v = %v, want %v (counted again)", labels, got, want)
		}
		return out
	}
	outcome := func(d contracts.Delegation) func() contracts.Outcome {
		return func() contracts.Outcome { return e.outcomeOf(t, ctx, d) }
	}

	t.Run("completed", func(t *testing.T) {
		out := ended(t, outcome(withScenario(lostParcel("m-completed", e.base), claimsagent.ScenarioInstant)))
		if out.Status != contracts.StatusCompleted {
			t.Fatalf("status = %s", out.Status)
		}
		f := w.scrape(t)
		for _, m := range []string{"GetAgentCard", "SendStreamingMessage"} {
			if n := sum(f, "delegate_a2a_request_duration_seconds", map[string]string{"agent_origin": agentOrigin, "method": m, "result": "ok"}); n < 1 {
				t.Errorf("no ok %s observed for %s", m, agentOrigin)
			}
		}
		if n := value(f, "delegate_card_verifications_total", map[string]string{"result": "unverified"}); n < 1 {
			t.Errorf("delegate_card_verifications_total{result=unverified} = %v", n)
		}
	})
	t.Run("failed", func(t *testing.T) {
		out := ended(t, outcome(withScenario(lostParcel("m-failed", e.base), claimsagent.ScenarioFail)))
		if out.Status != contracts.StatusFailed {
			t.Fatalf("status = %s", out.Status)
		}
	})
	t.Run("invalid_output", func(t *testing.T) {
		out := ended(t, outcome(withScenario(lostParcel("m-invalid", e.base), claimsagent.ScenarioWrongKind)))
		if out.Status != contracts.StatusInvalidOutput {
			t.Fatalf("status = %s", out.Status)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		d := withScenario(lostParcel("m-canceled", e.base), claimsagent.ScenarioSlow)
		out := ended(t, func() contracts.Outcome { return cancelWhenWorking(t, ctx, e, d) })
		if out.Status != contracts.StatusCanceled {
			t.Fatalf("status = %s", out.Status)
		}
		if n := sum(w.scrape(t), "delegate_a2a_request_duration_seconds", map[string]string{"agent_origin": agentOrigin, "method": "CancelTask"}); n < 1 {
			t.Errorf("no CancelTask observed")
		}
	})
	t.Run("waiting in input-required and out again", func(t *testing.T) {
		d := lostParcel("m-waiting", e.base)
		out := ended(t, func() contracts.Outcome {
			run, err := startRun(ctx, e.c, d)
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]string{"a2a_state": "input-required"}
			w.waitMetric(t, "one delegation waiting in input-required, for more than 0 s", func(f map[string]*dto.MetricFamily) (bool, string) {
				n, age := value(f, "delegate_waiting_delegations", in), value(f, "delegate_oldest_waiting_seconds", in)
				return n == 1 && age > 0, fmt.Sprintf("waiting %v, oldest %v s", n, age)
			})
			if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo"}); err != nil {
				t.Fatal(err)
			}
			var out contracts.Outcome
			if err := run.Get(ctx, &out); err != nil {
				t.Fatal(err)
			}
			w.waitMetric(t, "none waiting in input-required", func(f map[string]*dto.MetricFamily) (bool, string) {
				n, age := value(f, "delegate_waiting_delegations", in), value(f, "delegate_oldest_waiting_seconds", in)
				return n == 0 && age == 0, fmt.Sprintf("waiting %v, oldest %v s", n, age)
			})
			return out
		})
		if out.Status != contracts.StatusCompleted {
			t.Fatalf("status = %s", out.Status)
		}
	})
	t.Run("unknown outcome", func(t *testing.T) {
		d := lostParcel("m-unknown", e.base)
		d.Message.Data = json.RawMessage(`{"order_id":"UNK-1","scenario":"instant"}`)
		d.SendTimeout = "1s"
		out := ended(t, func() contracts.Outcome {
			run, err := startRun(ctx, e.c, d)
			if err != nil {
				t.Fatal(err)
			}
			unk := map[string]string{"a2a_state": string(contracts.PhaseUnknownOutcome)}
			w.waitMetric(t, "one delegation waiting in unknown-outcome", func(f map[string]*dto.MetricFamily) (bool, string) {
				n := value(f, "delegate_waiting_delegations", unk)
				return n == 1, fmt.Sprint(n)
			})
			if n := sum(w.scrape(t), "delegate_a2a_request_duration_seconds", map[string]string{"agent_origin": agentOrigin, "result": "unknown_outcome"}); n < 1 {
				t.Errorf("no call with result unknown_outcome observed")
			}
			if _, err := dclient.Get(e.c, d.LocalWorkflowID).Resolve(ctx, contracts.Resolution{Action: contracts.ActionAbandon}); err != nil {
				t.Fatal(err)
			}
			var out contracts.Outcome
			if err := run.Get(ctx, &out); err != nil {
				t.Fatal(err)
			}
			w.waitMetric(t, "none waiting in unknown-outcome", func(f map[string]*dto.MetricFamily) (bool, string) {
				n := value(f, "delegate_waiting_delegations", unk)
				return n == 0, fmt.Sprint(n)
			})
			return out
		})
		if out.Status != contracts.StatusUnknownOutcome {
			t.Fatalf("status = %s", out.Status)
		}
	})
	t.Run("token endpoint refuses", func(t *testing.T) {
		d := withScenario(lostParcel("m-token-refused", secured), claimsagent.ScenarioInstant)
		out := ended(t, outcome(d))
		if out.Status == contracts.StatusCompleted {
			t.Fatalf("status = %s with a refused token", out.Status)
		}
		tokenOrigin := strings.TrimSuffix(tokens.URL, "/")
		if n := value(w.scrape(t), "delegate_token_requests_total", map[string]string{"token_origin": tokenOrigin, "result": "authorization"}); n < 1 {
			t.Errorf("delegate_token_requests_total{token_origin=%s,result=authorization} = %v", tokenOrigin, n)
		}
	})
	t.Run("signed card does not verify", func(t *testing.T) {
		d := withScenario(lostParcel("m-card-untrusted", signed), claimsagent.ScenarioInstant)
		d.RequireSignedCard = true
		before := value(w.scrape(t), "delegate_card_verifications_total", map[string]string{"result": "untrusted"})
		out := ended(t, outcome(d))
		if out.Status != contracts.StatusCardUntrusted {
			t.Fatalf("status = %s", out.Status)
		}
		if n := value(w.scrape(t), "delegate_card_verifications_total", map[string]string{"result": "untrusted"}); n <= before {
			t.Errorf("delegate_card_verifications_total{result=untrusted} = %v, was %v", n, before)
		}
	})

	t.Run("no delegation id in any label value", func(t *testing.T) {
		for name, f := range w.scrape(t) {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					for _, id := range append(append([]string(nil), ids...), taskIDs...) {
						if strings.Contains(l.GetValue(), id) {
							t.Errorf("%s{%s=%q} names delegation or task %s", name, l.GetName(), l.GetValue(), id)
						}
					}
					if strings.Contains(l.GetValue(), "/.well-known") || strings.Contains(l.GetValue(), "/a2a/") {
						t.Errorf("%s{%s=%q}: a URL path in a label", name, l.GetName(), l.GetValue())
					}
				}
			}
		}
	})
	t.Run("log lines carry the delegation's ids, never a secret", func(t *testing.T) {
		logs := w.log.String()
		for _, s := range []string{clientSecret, bearer} {
			if strings.Contains(logs, s) {
				t.Errorf("the worker's log holds a secret")
			}
		}
		var sent map[string]any
		for _, l := range logLines(logs) {
			if l["local_workflow_id"] == "m-completed" && l["msg"] == "a2a message sent" {
				sent = l
			}
		}
		if sent == nil {
			t.Fatal("no \"a2a message sent\" line of m-completed")
		}
		for _, k := range []string{"run_id", "remote_task_id", "agent_origin"} {
			if v, _ := sent[k].(string); v == "" {
				t.Errorf("line %v lacks %s", sent, k)
			}
		}
		if sent["agent_origin"] != agentOrigin {
			t.Errorf("agent_origin = %v, want %s", sent["agent_origin"], agentOrigin)
		}
	})
}
