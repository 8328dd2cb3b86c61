package a2aclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

func TestSendGetCancelAgainstClaimsAgent(t *testing.T) {
	var mu sync.Mutex
	versions := map[string]string{}
	srv := httptest.NewUnstartedServer(nil)
	agent := claimsagent.New(claimsagent.Config{BaseURL: "http://" + srv.Listener.Addr().String()})
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		versions[r.URL.Path] = r.Header.Get("A2A-Version")
		mu.Unlock()
		agent.ServeHTTP(w, r)
	})
	srv.Start()
	defer srv.Close()

	for _, tc := range []struct{ name, binding, version, path string }{
		{"JSONRPC 1.0", "JSONRPC", "1.0", claimsagent.JSONRPCPath},
		{"HTTP+JSON 1.0", "HTTP+JSON", "1.0", claimsagent.RESTPath},
		{"JSONRPC 0.3", "JSONRPC", "0.3", claimsagent.LegacyJSONRPCPath},
	} {
		binding := tc.name
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Dial(ctx, contracts.Interface{URL: srv.URL + tc.path, Binding: tc.binding, Version: tc.version}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			snap, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m-" + binding, Text: "order Z-9 lost", Data: []byte(`{"scenario":"slow"}`)})
			if err != nil {
				t.Fatalf("SendMessage() error = %v", err)
			}
			if snap.TaskID == "" || snap.State.Terminal() {
				t.Fatalf("SendMessage() = %+v, want a running task (returnImmediately)", snap)
			}
			got, err := c.GetTask(ctx, snap.TaskID, "")
			if err != nil || got.TaskID != snap.TaskID {
				t.Fatalf("GetTask() = %+v, %v", got, err)
			}
			canceled, err := c.CancelTask(ctx, snap.TaskID, snap.ContextID)
			if err != nil || canceled.State != contracts.TaskStateCanceled {
				t.Fatalf("CancelTask() = %+v, %v", canceled, err)
			}
			_, err = c.GetTask(ctx, "no-such-task", "")
			var ce *CallError
			if !errors.As(err, &ce) || ce.Category != contracts.CategoryProtocol {
				t.Errorf("GetTask(unknown) error = %v, want category protocol", err)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for path, v := range versions {
		want := "1.0"
		if path == claimsagent.LegacyJSONRPCPath {
			want = "0.3"
		}
		if v != want && !(want == "0.3" && v == "") {
			t.Errorf("%s: A2A-Version header = %q, want %s (A2A 1.0 §3.6.1)", path, v, want)
		}
	}
	if len(versions) == 0 {
		t.Fatal("no request reached the agent")
	}
}

func TestClassify(t *testing.T) {
	status := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
	}))
	defer srv.Close()
	ctx := context.Background()
	c, err := Dial(ctx, contracts.Interface{URL: srv.URL, Binding: "JSONRPC", Version: "1.0"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		status int
		want   contracts.Category
	}{
		{http.StatusUnauthorized, contracts.CategoryAuthorization},
		{http.StatusForbidden, contracts.CategoryAuthorization},
		{http.StatusServiceUnavailable, contracts.CategoryTransient},
		{http.StatusInternalServerError, contracts.CategoryTransient},
		{http.StatusBadRequest, contracts.CategoryProtocol},
	} {
		status = tt.status
		_, err := c.GetTask(ctx, "t", "")
		var ce *CallError
		if !errors.As(err, &ce) || ce.Category != tt.want || ce.Status != tt.status {
			t.Errorf("HTTP %d: error = %v, want category %s", tt.status, err, tt.want)
		}
	}

	// Connection refused: not written, transient.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c2, _ := Dial(ctx, contracts.Interface{URL: "http://" + addr, Binding: "JSONRPC", Version: "1.0"}, Options{})
	_, err = c2.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m", Text: "x"})
	var ce *CallError
	if !errors.As(err, &ce) || ce.Category != contracts.CategoryTransient || ce.Written {
		t.Errorf("refused connection: error = %+v, want transient, not written", err)
	}

	// Accepted, then no answer: written, unknown outcome.
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer hang.Close()
	defer close(stop)
	c3, _ := Dial(ctx, contracts.Interface{URL: hang.URL, Binding: "JSONRPC", Version: "1.0"}, Options{})
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = c3.SendMessage(tctx, contracts.OutboundMessage{MessageID: "m", Text: "x"})
	if !errors.As(err, &ce) || ce.Category != contracts.CategoryUnknownOutcome || !ce.Written {
		t.Errorf("hung send: error = %+v, want unknown_outcome, written", err)
	}
}
