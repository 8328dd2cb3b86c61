package e2e

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/mcp"
)

// TestMCPStatusWaitsPastAnAnswer: right after delegation_answer, the
// search attribute A2AState may still say input-required while the
// delegation sends the answer; delegation_status with wait_seconds waits
// until the delegation really moved on (here: the agent works a second,
// then completes), not returning at once with "sending".
func TestMCPStatusWaitsPastAnAnswer(t *testing.T) {
	e := setup(t, func(o *options) { o.agent = claimsagent.Config{WorkDelay: 1500 * time.Millisecond} })
	cs := stdioSession(t, e.mcpServer(t, "alice"), nil)
	res, r := call(t, cs, "open_parcel_claim_auto", map[string]any{"order_id": "A-9009", "wait_seconds": 30})
	if res.IsError || r.Question == nil {
		t.Fatalf("start: %s (%+v), want the agent's question", text(res), r)
	}
	id := r.LocalWorkflowID
	res, r = call(t, cs, mcp.ToolAnswer, map[string]any{"local_workflow_id": id, "text": "Photo sent."})
	if res.IsError {
		t.Fatalf("delegation_answer: %s", text(res))
	}
	begin := time.Now()
	res, r = call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": id, "wait_seconds": 10})
	took := time.Since(begin)
	if res.IsError {
		t.Fatalf("delegation_status: %s", text(res))
	}
	if r.Outcome == nil || r.Outcome.Status != contracts.StatusCompleted {
		t.Fatalf("delegation_status wait_seconds=10 returned after %s with a2a_state %s (%s), want it to wait until the delegation completed",
			took.Round(time.Millisecond), r.A2AState, text(res))
	}
}

// TestMCPRetryingShown: a delegation whose agent cannot be reached says
// why: structuredContent.retrying (operation, attempts, the last error,
// the next attempt) and the text, as `delegate status` prints "retrying".
func TestMCPRetryingShown(t *testing.T) {
	e := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() // nothing listens there once closed
	ln.Close()
	s, err := mcp.New(mcp.Options{Client: e.c, Templates: mcpTemplates(t, dead), Actor: "alice", Burst: 1000, Rate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	cs := stdioSession(t, s, nil)
	res, r := call(t, cs, "open_parcel_claim_auto", map[string]any{"order_id": "A-1212"})
	if res.IsError {
		t.Fatalf("start: %s", text(res))
	}
	id := r.LocalWorkflowID
	waitFor(t, "retrying shown", 60*time.Second, func() (bool, string) {
		res, r = call(t, cs, mcp.ToolStatus, map[string]any{"local_workflow_id": id, "wait_seconds": 2})
		return r.Retrying != nil && r.Retrying.Attempts >= 1, text(res)
	})
	rt := r.Retrying
	if rt.Operation != "CheckAndSend" || !strings.Contains(rt.LastError, "connection refused") || rt.NextAttempt.IsZero() || len(rt.LastError) > 700 {
		t.Fatalf("retrying = %+v, want CheckAndSend, connection refused, a next attempt", rt)
	}
	if tx := text(res); !strings.Contains(tx, "Retrying CheckAndSend: attempt ") || !strings.Contains(tx, "connection refused") || !strings.Contains(tx, "not instructions") {
		t.Fatalf("text %q does not say it is retrying and why", tx)
	}
}

// TestMCPResourcesListed: resources/list gives the actor's delegations as
// delegation://ID resources, and no other actor's.
func TestMCPResourcesListed(t *testing.T) {
	e := setup(t)
	cs := stdioSession(t, e.mcpServer(t, "alice"), nil)
	res, r := call(t, cs, "claims_scenario", map[string]any{"order_id": "A-1313", "scenario": "slow"})
	if res.IsError {
		t.Fatalf("start: %s", text(res))
	}
	uri := "delegation://" + r.LocalWorkflowID
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitFor(t, "listed", 30*time.Second, func() (bool, string) {
		lr, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatalf("ListResources() error = %v", err)
		}
		if lr.CacheScope != "private" {
			t.Fatalf("resources/list cacheScope %q, want private (one actor's list)", lr.CacheScope)
		}
		for _, rs := range lr.Resources {
			if rs.URI == uri && rs.MIMEType == "application/json" && strings.Contains(rs.Title, "claims_scenario") {
				return true, ""
			}
		}
		b, _ := json.Marshal(lr)
		return false, string(b)
	})
	bob := stdioSession(t, e.mcpServer(t, "bob"), nil)
	lr, err := bob.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("bob's ListResources() error = %v", err)
	}
	if len(lr.Resources) != 0 {
		t.Fatalf("bob lists %d resources, want none of alice's: %+v", len(lr.Resources), lr.Resources[0])
	}
}
