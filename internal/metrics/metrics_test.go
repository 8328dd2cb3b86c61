package metrics

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeExposesSDKMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, addr, err := Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.WithTags(map[string]string{"task_queue": "delegate"}).Counter("temporal_workflow_completed").Inc(3)
	h.Timer("temporal_activity_execution_latency").Record(20 * time.Millisecond)
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, `temporal_workflow_completed{task_queue="delegate"} 3`) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("/metrics does not show the counter:\n%s", body)
}
