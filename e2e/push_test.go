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
	"github.com/a2adelegate/delegate/push"
)

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
	key := []byte(strings.Repeat("p", 32))
	var c client.Client // set once the env is up; pushes come after
	hook := push.NewHandler(key, func(ctx context.Context, wid string, u contracts.TaskUpdate) error {
		return dclient.Get(c, wid).TaskUpdate(ctx, u)
	}, nil)
	webhook := httptest.NewServer(hook)
	defer webhook.Close()
	settings, err := push.NewSettings(webhook.URL+"/a2a/push", key)
	if err != nil {
		t.Fatal(err)
	}
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
