package a2aclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// Each rewrite the wire seam (wireTransport, exactValues) makes stays only
// while bare a2a-go (v2.4.0, go.mod) still fails or misreads the body it
// rewrites: each case here calls a2a-go without the seam and shows that,
// so an a2a-go upgrade that fixes one turns its case red, and the rewrite
// is then dropped. What delegate reads of the same bodies is asserted in
// wire_test.go and exact_test.go.
func TestWireRewritesStillNeeded(t *testing.T) {
	bare := func(t *testing.T, h http.HandlerFunc, binding, version string) *sdk.Client {
		t.Helper()
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		hc := srv.Client()
		c, err := sdk.NewFactory(sdk.WithDefaultsDisabled(), sdk.WithJSONRPCTransport(hc), sdk.WithRESTTransport(hc),
			a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}), a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}),
		).CreateFromEndpoints(context.Background(), []*a2a.AgentInterface{{URL: srv.URL, ProtocolBinding: a2a.TransportProtocol(binding), ProtocolVersion: a2a.ProtocolVersion(version)}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Destroy() })
		return c
	}
	rpc := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}
	}
	get := func(c *sdk.Client) (*a2a.Task, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.GetTask(ctx, &a2a.GetTaskRequest{ID: "t-1"})
	}
	t.Run("numeric JSON-RPC id (JSON-RPC 2.0 §4)", func(t *testing.T) {
		// a2a-go decodes only a string id.
		c := bare(t, rpc(`{"jsonrpc":"2.0","id":1,"result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`), "JSONRPC", "1.0")
		if _, err := get(c); err == nil {
			t.Error("a2a-go now reads a numeric id: drop the id rewrite in normalizeBody")
		}
	})
	t.Run("JSON-RPC error data that is not a list (JSON-RPC 2.0 §5.1)", func(t *testing.T) {
		c := bare(t, func(w http.ResponseWriter, r *http.Request) {
			var id string
			b, _ := io.ReadAll(r.Body)
			if i := strings.Index(string(b), `"id":"`); i >= 0 {
				id = string(b)[i+6:]
				id = id[:strings.Index(id, `"`)]
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":"`+id+`","error":{"code":-32001,"message":"no such task","data":"t-9"}}`)
		}, "JSONRPC", "1.0")
		_, err := get(c)
		if err != nil && strings.Contains(err.Error(), "no such task") && !strings.Contains(err.Error(), "unmarshal") {
			t.Errorf("a2a-go now keeps the error with string data (%v): drop the data rewrite", err)
		}
	})
	t.Run("a 0.3 state spelling on a 1.0 interface", func(t *testing.T) {
		c := bare(t, rpc(`{"jsonrpc":"2.0","id":"x","result":{"id":"t-1","contextId":"c-1","status":{"state":"completed"}}}`), "HTTP+JSON", "1.0")
		task, err := get(c)
		if err == nil && task.Status.State == a2a.TaskStateCompleted {
			t.Error("a2a-go now reads \"completed\" on 1.0: drop respellStates")
		}
	})
	t.Run("an int64 in a data part (float64 round trip)", func(t *testing.T) {
		c := bare(t, rpc(`{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"data":{"n":7615917337495251231}}]}]}`), "HTTP+JSON", "1.0")
		task, err := get(c)
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := task.Artifacts[0].Parts[0].Data().(map[string]any)["n"].(float64); !ok || n != 7615917337495251231 {
			t.Errorf("a2a-go now decodes data as %T %v: revisit exactValues", task.Artifacts[0].Parts[0].Data(), task.Artifacts[0].Parts[0].Data())
		}
	})
	t.Run("a status timestamp that is not RFC 3339", func(t *testing.T) {
		c := bare(t, rpc(`{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED","timestamp":1733076000}}`), "HTTP+JSON", "1.0")
		if _, err := get(c); err == nil {
			t.Error("a2a-go now reads an epoch timestamp: drop the timestamp tolerance")
		}
	})
	t.Run("a history part of no known kind", func(t *testing.T) {
		c := bare(t, rpc(`{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"history":[{"messageId":"h","role":"ROLE_USER","parts":[{"video":"x"}]}]}`), "HTTP+JSON", "1.0")
		if _, err := get(c); err == nil {
			t.Error("a2a-go now reads a part of unknown kind: revisit the part tolerance")
		}
	})
	t.Run("an HTTP+JSON error typed application/a2a+json (A2A 1.0 §11.6)", func(t *testing.T) {
		c := bare(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/a2a+json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found: t-1","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`)
		}, "HTTP+JSON", "1.0")
		if _, err := get(c); err == nil || errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("a2a-go now reads an application/a2a+json error (%v): drop the Content-Type rewrite", err)
		}
	})
	t.Run("jsonrpc 1.0 is accepted", func(t *testing.T) {
		c := bare(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			id := string(b)[strings.Index(string(b), `"id":"`)+6:]
			id = id[:strings.Index(id, `"`)]
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"1.0","id":"`+id+`","result":{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}}`)
		}, "JSONRPC", "1.0")
		if _, err := get(c); err != nil {
			t.Errorf("a2a-go now refuses jsonrpc 1.0 (%v): drop the check in checkRPCResponse", err)
		}
	})
}
