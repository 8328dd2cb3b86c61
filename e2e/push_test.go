package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/activities"
	dclient "github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/interop"
	"github.com/a2adelegate/delegate/push"
)

// newWebhook serves a push webhook (package push) for key that relays to
// the client *c points at once the env is up (pushes come after the
// first send), and returns the workers' push settings and the handler.
func newWebhook(t *testing.T, key []byte, c *client.Client, path string) (*push.Settings, *push.Handler) {
	t.Helper()
	hook := push.NewHandler(key, func(ctx context.Context, wid string, u contracts.TaskUpdate) error {
		return dclient.Get(*c, wid).TaskUpdate(ctx, u)
	}, nil)
	webhook := httptest.NewServer(hook)
	t.Cleanup(webhook.Close)
	settings, err := push.NewSettings(webhook.URL+path, key)
	if err != nil {
		t.Fatal(err)
	}
	return settings, hook
}

// An agent whose card declares pushNotifications (the claims agent,
// a2a-go's push sender) is followed by push: the worker registers a push
// config pointing at the webhook with a token derived for the delegation
// and the task; the agent pushes when the task completes; the webhook
// authenticates the push and signals the delegation, which reads the task
// once and completes. No GetTask is made between the send and the first
// push (the waiting cadence is an hour), and the token never enters the
// history. A push forged with a wrong token is refused and signals
// nothing.
func TestPushFollowsTheTask(t *testing.T) {
	var c client.Client // set once the env is up; pushes come after
	settings, hook := newWebhook(t, []byte(strings.Repeat("p", 32)), &c, "/a2a/push")
	var gets atomic.Int32
	e := setup(t, func(o *options) {
		o.agent.StubbornDelay = 8 * time.Second
		o.acts = func(a *activities.Activities, _ string) { a.Push = settings }
		o.proxy = func(agentURL string) http.Handler {
			return interceptRPC(agentURL, "GetTask", func(w http.ResponseWriter, r *http.Request, _ []byte, forward http.Handler) {
				gets.Add(1)
				forward.ServeHTTP(w, r)
			})
		}
	})
	c = e.c
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := lostParcel("pushed-1", e.base)
	d.Message.Data = json.RawMessage(`{"order_id":"A-1001","scenario":"stubborn"}`)
	d.WaitingPollSeconds = 3600
	run, err := startRun(ctx, e.c, d)
	if err != nil {
		t.Fatal(err)
	}
	var afterSend int32
	waitFor(t, "the push config registered", 30*time.Second, func() (bool, string) {
		s, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
		if err != nil {
			return false, err.Error()
		}
		afterSend = gets.Load()
		return s.Push, s.A2AState
	})
	// While it waits for the push, visibility says where it stands.
	waitFor(t, "list --state working to find it", 6*time.Second, func() (bool, string) {
		rows, err := dclient.List(ctx, e.c, dclient.ListOptions{Namespace: e.srv.Namespace(), A2AState: "working"})
		if err != nil {
			return false, err.Error()
		}
		return len(rows) == 1 && rows[0].ID == d.LocalWorkflowID, fmt.Sprint(rows)
	})
	// A forged push: the right delegation and task, a wrong token.
	s, _ := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
	req, _ := http.NewRequest(http.MethodPost, settings.URL(d.LocalWorkflowID, e.base), strings.NewReader(`{"statusUpdate":{"taskId":"`+s.RemoteTaskID+`","status":{"state":"TASK_STATE_COMPLETED"}}}`))
	req.Header.Set("A2A-Notification-Token", "forged")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged push: %v %v, want 401", resp, err)
	}
	var out contracts.Outcome
	if err := run.Get(ctx, &out); err != nil || out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 {
		t.Fatalf("outcome = %+v, %v", out, err)
	}
	st, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reads := gets.Load() - afterSend
	t.Logf("GetTask before the push config: %d, after: %d; pushes taken: %d; webhook: %v", afterSend, reads, st.Pushes, hook.Counts())
	if st.Pushes < 1 || reads < 1 || int(reads) > st.Pushes {
		t.Errorf("after the send: %d GetTask, %d pushes taken; want every read caused by a push", reads, st.Pushes)
	}
	if n := hook.Counts(); n["accepted"] < 1 || n["bad_token"] != 1 {
		t.Errorf("webhook counts = %v", n)
	}
	raw, _ := rawHistory(t, ctx, e.c, d.LocalWorkflowID)
	clearText(t, raw, settings.Token(d.LocalWorkflowID, st.RemoteTaskID, e.base))
}

// Push from agents this project did not write: the a2a-js SDK 1.x (A2A
// 1.0) and 0.3.x (A2A 0.3) with pushNotifications on (their own
// DefaultPushNotificationSender). The worker registers a push config with
// each after the first send; after the operator's answer the agent works
// for 3 s and completes; its pushes reach the webhook, which signals the
// delegation; the delegation reads the task and completes then, not at
// the hour the contract's waiting cadence says (nothing else reads a task
// followed by push).
func TestInteropPush(t *testing.T) {
	dir := requireInterop(t)
	for _, sdk := range []string{interop.SDK1, interop.SDK03} {
		t.Run("a2a-js-"+sdk, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			agent, err := interop.Start(ctx, interop.Options{SDK: sdk, Dir: dir, Push: true, WorkDelay: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(agent.Stop)
			var c client.Client
			settings, hook := newWebhook(t, []byte(strings.Repeat("j", 32)), &c, "")
			e := setup(t, func(o *options) { o.acts = func(a *activities.Activities, _ string) { a.Push = settings } })
			c = e.c
			d := jsContract("js-push-"+strings.ReplaceAll(sdk, ".", ""), agent.CardURL, "lost-parcel", nil)
			d.WaitingPollSeconds = 3600
			run, err := startRun(ctx, e.c, d)
			if err != nil {
				t.Fatal(err)
			}
			waitA2AState(t, ctx, e.c, d.LocalWorkflowID, "input-required")
			if _, err := dclient.Get(e.c, d.LocalWorkflowID).Answer(ctx, contracts.Answer{Text: "photo attached: box.jpg", AnsweredBy: "interop"}); err != nil {
				t.Fatal(err)
			}
			octx, ocancel := context.WithTimeout(ctx, 30*time.Second)
			defer ocancel()
			var out contracts.Outcome
			if err := run.Get(octx, &out); err != nil {
				st, _ := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
				t.Fatalf("no outcome within 30 s (the waiting cadence is an hour): %v; state %s, push %v, pushes taken %d; webhook %v", err, st.A2AState, st.Push, st.Pushes, hook.Counts())
			}
			if out.Status != contracts.StatusCompleted || len(out.Outputs) != 1 {
				t.Fatalf("outcome = %s %+v, want completed with the claim", out.Status, out.Error)
			}
			st, err := dclient.Get(e.c, d.LocalWorkflowID).State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Push || st.Pushes < 1 || hook.Counts()["accepted"] < 1 {
				t.Errorf("push %v, pushes taken %d, webhook %v; want the agent's pushes taken", st.Push, st.Pushes, hook.Counts())
			}
		})
	}
}
