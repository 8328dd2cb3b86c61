package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/interop"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// TestInteropErrors reads the errors a2a-js servers send, through this
// client: over HTTP+JSON they come as application/a2a+json google.rpc.Status
// bodies (a2a-go alone reads them as server errors, which would be retried
// as transient). Unknown task, cancel of an ended task, and a message to an
// ended task are each a permanent protocol error.
func TestInteropErrors(t *testing.T) {
	dir, err := interop.DefaultDir()
	if err == nil {
		err = interop.Available(dir)
	}
	if err != nil {
		if os.Getenv("DELEGATE_INTEROP") == "1" {
			t.Fatalf("interop peers unavailable: %v", err)
		}
		testutil.SkipGroup(t, testutil.GroupInterop, fmt.Sprintf("interop peers unavailable (make test-interop installs them): %v", err))
	}
	for _, tc := range []struct{ name, sdk, binding, path, wire, version string }{
		{"js1-jsonrpc", interop.SDK1, interop.BindingJSONRPC, "/a2a/jsonrpc", "JSONRPC", "1.0"},
		{"js1-rest", interop.SDK1, interop.BindingREST, "/a2a/rest", "HTTP+JSON", "1.0"},
		{"js03-jsonrpc", interop.SDK03, interop.BindingJSONRPC, "/a2a/jsonrpc", "JSONRPC", "0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			agent, err := interop.Start(ctx, interop.Options{SDK: tc.sdk, Bindings: []string{tc.binding}, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer agent.Stop()
			c, err := Dial(ctx, contracts.Interface{URL: agent.URL + tc.path, Binding: tc.wire, Version: tc.version}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			permanent := func(what string, err error) {
				t.Helper()
				var ce *CallError
				if !errors.As(err, &ce) || ce.Category != contracts.CategoryProtocol {
					t.Errorf("%s: error = %v, want a permanent protocol error", what, err)
				}
			}
			_, err = c.GetTask(ctx, "no-such-task", "")
			permanent("GetTask(unknown)", err)
			snap, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m-" + tc.name, Text: "order A-1001", Data: []byte(`{"scenario":"instant"}`)})
			if err != nil {
				t.Fatal(err)
			}
			for !snap.State.Terminal() {
				if ctx.Err() != nil {
					t.Fatalf("the task did not complete: %+v", snap)
				}
				time.Sleep(20 * time.Millisecond)
				if snap, err = c.GetTask(ctx, snap.TaskID, snap.ContextID); err != nil {
					t.Fatal(err)
				}
			}
			_, err = c.CancelTask(ctx, snap.TaskID, snap.ContextID)
			permanent("CancelTask(completed)", err)
			_, err = c.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m2-" + tc.name, TaskID: snap.TaskID, ContextID: snap.ContextID, Text: "more"})
			permanent("SendMessage(to a completed task)", err)
		})
	}
}
