package activities

import (
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

func agentServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = claimsagent.New(claimsagent.Config{BaseURL: "http://" + srv.Listener.Addr().String(), WorkDelay: 20 * time.Millisecond})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

var quiet = slog.New(slog.DiscardHandler)

func activityEnv(t *testing.T, a *Activities) *testsuite.TestActivityEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(quiet))
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	return env
}

func category(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

func TestResolveSendWatch(t *testing.T) {
	base := agentServer(t)
	a := &Activities{PollInitial: 10 * time.Millisecond, PollMax: 50 * time.Millisecond, Logger: quiet}
	env := activityEnv(t, a)

	v, err := env.ExecuteActivity(a.ResolveCard, ResolveCardInput{CardURL: base, Skill: "open-claim"})
	if err != nil {
		t.Fatalf("ResolveCard() error = %v", err)
	}
	var card ResolvedCard
	if err := v.Get(&card); err != nil {
		t.Fatal(err)
	}
	if card.Interface.Version != "1.0" || card.Interface.Binding != "JSONRPC" || !card.Streaming || card.Agent.CardDigest == "" {
		t.Fatalf("ResolveCard() = %+v", card)
	}

	v, err = env.ExecuteActivity(a.SendMessage, SendInput{Interface: card.Interface, Message: a2aclient.Outbound{MessageID: "m-1", Text: "order A-5 lost"}})
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	var snap a2aclient.Snapshot
	_ = v.Get(&snap)
	if snap.TaskID == "" {
		t.Fatalf("SendMessage() = %+v", snap)
	}
	// WatchTask returns only when the state differs from Since.
	since := snap.State
	for since != a2aclient.StateInputRequired {
		v, err = env.ExecuteActivity(a.WatchTask, WatchInput{Interface: card.Interface, TaskID: snap.TaskID, Since: since})
		if err != nil {
			t.Fatalf("WatchTask() error = %v", err)
		}
		var next a2aclient.Snapshot
		_ = v.Get(&next)
		if next.State == since {
			t.Fatalf("WatchTask(since %s) returned the same state", since)
		}
		since = next.State
	}

	_, err = env.ExecuteActivity(a.WatchTask, WatchInput{Interface: card.Interface, TaskID: "no-such-task", Since: "working"})
	if category(err) != string(contracts.CategoryProtocol) {
		t.Errorf("WatchTask(unknown task) error = %v, want category protocol", err)
	}
}

func TestResolveCardErrors(t *testing.T) {
	base := agentServer(t)
	a := &Activities{Logger: quiet}
	env := activityEnv(t, a)

	v, err := env.ExecuteActivity(a.ResolveCard, ResolveCardInput{CardURL: base, Skill: "refund"})
	if err != nil {
		t.Fatalf("missing skill: error = %v, want a result with SkillFound false", err)
	}
	var card ResolvedCard
	if err := v.Get(&card); err != nil || card.SkillFound || !card.Trusted() {
		t.Errorf("missing skill: %+v, %v", card, err)
	}
	_, err = env.ExecuteActivity(a.ResolveCard, ResolveCardInput{CardURL: "file:///etc/passwd", Skill: "open-claim"})
	var appErr *temporal.ApplicationError
	if category(err) != string(contracts.CategoryCard) || !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Errorf("bad card URL: error = %v, want non-retryable category card", err)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err = env.ExecuteActivity(a.ResolveCard, ResolveCardInput{CardURL: "http://" + addr, Skill: "open-claim"})
	if category(err) != string(contracts.CategoryTransient) {
		t.Errorf("unreachable card: error = %v, want category transient", err)
	}
}
