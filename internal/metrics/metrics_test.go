package metrics

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scrape reads /metrics at addr until it contains want (the SDK's tally
// scope reports every second) or the deadline passes.
func scrape(t *testing.T, addr string, want ...string) string {
	t.Helper()
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(body, w)
			}
			if ok {
				return body
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("/metrics does not show %q:\n%s", want, body)
	return ""
}

func TestServeExposesSDKMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, addr, err := Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.WithTags(map[string]string{"task_queue": "delegate"}).Counter("temporal_workflow_completed").Inc(3)
	h.Timer("temporal_activity_execution_latency").Record(20 * time.Millisecond)
	scrape(t, addr, `temporal_workflow_completed{task_queue="delegate"} 3`)
}

// The ended counter keeps only its own labels, whatever tags the SDK's
// handler carries (namespace, task queue, workflow type).
func TestEndedCounterDropsSDKTags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New(Options{})
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler().WithTags(map[string]string{"namespace": "default", "workflow_type": "Delegation", "task_queue": "delegate"})
	h.WithTags(map[string]string{"status": "failed", "category": "remote_business"}).Counter(DelegationsEnded).Inc(1)
	h.WithTags(map[string]string{"status": "completed", "category": ""}).Counter(DelegationsEnded).Inc(2)
	scrape(t, addr, `delegate_delegations_ended_total{category="remote_business",status="failed"} 1`,
		`delegate_delegations_ended_total{category="",status="completed"} 2`,
		`delegate_waiting_delegations{a2a_state="input-required"} 0`)
}

// Origins are folded to scheme://host:port; past the cap, and for what is
// not a URL, they are "other"; a path, a query or user info never shows.
func TestOriginLabels(t *testing.T) {
	for in, want := range map[string]string{
		"https://agent.example/a2a/jsonrpc?x=secret":  "https://agent.example:443",
		"http://user:pw@127.0.0.1:8080/.well-known/x": "http://127.0.0.1:8080",
		"127.0.0.1:9998": "grpc://127.0.0.1:9998",
		"not a url":      "",
		"ftp://x/y":      "",
	} {
		if got := Origin(in); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
	}
	s := newOriginSet(2)
	got := []string{s.label("http://a:1/p"), s.label("http://b:2/q"), s.label("http://c:3/"), s.label("http://a:1/other"), s.label("junk")}
	want := []string{"http://a:1", "http://b:2", OtherOrigin, "http://a:1", OtherOrigin}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("labels = %v, want %v", got, want)
			break
		}
	}
}

func TestWaitingQuery(t *testing.T) {
	q := WaitingQuery("input-required")
	if q != "WorkflowType = 'Delegation' AND ExecutionStatus = 'Running' AND A2AState IN ('input-required')" {
		t.Errorf("query = %s", q)
	}
}

func TestRunSetForgetsTheOldest(t *testing.T) {
	s := newRunSet(2)
	if !s.add("a") || !s.add("b") || s.add("a") || !s.add("c") || !s.add("a") || s.add("c") {
		t.Error("runSet: a run counted twice, or a new one refused")
	}
}

// Every interface url the client dials gets its own origin label: an
// upper-case host is the same origin as its lower-case spelling, a gRPC
// target without a port (grpc://host, grpcs://host) or in the dns:///
// form is not folded into "other", and what is not a URL never reaches a
// label as it is (a query, user info or a path in it would).
func TestOriginLabelsOfHostileURLs(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:s3cr3t@Agent.EXAMPLE:8443/a2a?token=SECRETQ#f": "https://agent.example:8443",
		"HTTPS://AGENT.example/x":                                    "https://agent.example:443",
		"http://[::1]:9999/a2a":                                      "http://[::1]:9999",
		"grpcs://agent.example":                                      "grpc://agent.example:443",
		"grpc://agent.example":                                       "grpc://agent.example:80",
		"grpcs://Agent.Example:8443":                                 "grpc://agent.example:8443",
		"dns:///agent.example:50051":                                 "grpc://agent.example:50051",
		"AGENT.example:443":                                          "grpc://agent.example:443",
		"agent.example:443?token=SECRETQ":                            "",
		"s3cr3t@agent.example:443":                                   "",
		"https://%41gent.example/?k=SECRET":                          "",
		"http://user@/x":                                             "",
	} {
		if got := Origin(in); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
	}
}

// The card verification results are a closed set, served at 0 from the
// start: an alert rule's increase() sees no increase in a series whose
// first sample is already 1 (DelegateCardStoppedVerifying would miss a
// first untrusted card).
func TestCardVerificationsServedFromZero(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := New(Options{})
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scrape(t, addr, `delegate_card_verifications_total{result="verified"} 0`,
		`delegate_card_verifications_total{result="unverified"} 0`,
		`delegate_card_verifications_total{result="untrusted"} 0`,
		`delegate_card_verifications_total{result="changed"} 0`)
}
