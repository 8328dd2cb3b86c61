package trpcpeer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rpc posts one JSON-RPC request and decodes the response's result.
func rpc(t *testing.T, a *Agent, key, method string, params any) (status int, result map[string]any, rpcErr map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(APIKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Result, out.Error
}

func message(text string, data map[string]any, taskID, contextID string) map[string]any {
	m := map[string]any{"kind": "message", "messageId": fmt.Sprintf("m-%d", time.Now().UnixNano()), "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": text}, map[string]any{"kind": "data", "data": data}}}
	if taskID != "" {
		m["taskId"], m["contextId"] = taskID, contextID
	}
	return map[string]any{"message": m, "configuration": map[string]any{"blocking": false, "acceptedOutputModes": []string{"application/json"}}}
}

func wireState(task map[string]any) string {
	s, _ := task["status"].(map[string]any)
	st, _ := s["state"].(string)
	return st
}

func waitState(t *testing.T, a *Agent, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, task, e := rpc(t, a, a.opts.APIKey, "tasks/get", map[string]any{"id": id})
		if e != nil {
			t.Fatalf("tasks/get: %v", e)
		}
		if wireState(task) == want {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s, want %s", id, wireState(task), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCard(t *testing.T) {
	a, err := Start(Options{APIKey: "k-123"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	resp, err := http.Get(a.CardURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	if card["protocolVersion"] != "0.2.5" || card["url"] != a.URL+"/" {
		t.Errorf("card = %v, want protocolVersion 0.2.5 at %s/", card, a.URL)
	}
	if _, has := card["preferredTransport"]; has {
		t.Errorf("card has preferredTransport: %v", card)
	}
	caps, _ := card["capabilities"].(map[string]any)
	if caps["streaming"] != false {
		t.Errorf("capabilities = %v, want streaming false", caps)
	}
	schemes, _ := card["securitySchemes"].(map[string]any)
	s, _ := schemes[APIKeyScheme].(map[string]any)
	if s["type"] != "apiKey" || s["in"] != "header" || s["name"] != APIKeyHeader {
		t.Errorf("securitySchemes = %v", schemes)
	}
	if status, _, _ := rpc(t, a, "", "tasks/get", map[string]any{"id": "x"}); status != http.StatusUnauthorized {
		t.Errorf("no key: status %d, want 401", status)
	}
	if status, _, _ := rpc(t, a, "wrong", "tasks/get", map[string]any{"id": "x"}); status != http.StatusUnauthorized {
		t.Errorf("wrong key: status %d, want 401", status)
	}
	if c := a.Counts(); c.Unauthorized != 2 || c.GetTasks != 0 {
		t.Errorf("counts = %+v, want 2 refused", c)
	}
}

func TestScenarios(t *testing.T) {
	var (
		mu  sync.Mutex
		log strings.Builder
	)
	a, err := Start(Options{Log: func(s string) { mu.Lock(); defer mu.Unlock(); log.WriteString(s + "\n") }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Log(log.String())
		}
	}()

	t.Run("instant", func(t *testing.T) {
		a.ResetCounts()
		_, task, e := rpc(t, a, "", "message/send", message("go", map[string]any{"scenario": "instant", "order_id": "A-1001"}, "", ""))
		if e != nil || wireState(task) != "completed" {
			t.Fatalf("message/send = %v %v, want completed", task, e)
		}
		arts, _ := task["artifacts"].([]any)
		if len(arts) != 1 {
			t.Fatalf("artifacts = %v", arts)
		}
		art := arts[0].(map[string]any)
		data := art["parts"].([]any)[0].(map[string]any)["data"].(map[string]any)
		if art["name"] != ArtifactName || data["order_id"] != "A-1001" || !strings.HasPrefix(data["claim_id"].(string), "CLM-") {
			t.Errorf("artifact = %v", art)
		}
		if c := a.Counts(); c.Tasks != 1 || c.Messages != 1 {
			t.Errorf("counts = %+v", c)
		}
	})
	t.Run("lost-parcel", func(t *testing.T) {
		a.ResetCounts()
		_, task, e := rpc(t, a, "", "message/send", message("lost", map[string]any{"scenario": "lost-parcel"}, "", ""))
		if e != nil || wireState(task) != "working" {
			t.Fatalf("message/send = %v %v, want working", task, e)
		}
		id, ctxID := task["id"].(string), task["contextId"].(string)
		task = waitState(t, a, id, "input-required")
		if !strings.Contains(fmt.Sprint(task["status"]), "photo of the box") {
			t.Errorf("question = %v", task["status"])
		}
		_, task, e = rpc(t, a, "", "message/send", message("photo", map[string]any{}, id, ctxID))
		if e != nil || task["id"] != id {
			t.Fatalf("follow-up = %v %v", task, e)
		}
		task = waitState(t, a, id, "completed")
		if arts, _ := task["artifacts"].([]any); len(arts) != 1 {
			t.Errorf("artifacts = %v", arts)
		}
		if c := a.Counts(); c.Tasks != 1 || c.Messages != 2 || c.FollowUps != 1 {
			t.Errorf("counts = %+v", c)
		}
	})
	t.Run("slow-cancel", func(t *testing.T) {
		a.ResetCounts()
		_, task, _ := rpc(t, a, "", "message/send", message("slow", map[string]any{"scenario": "slow"}, "", ""))
		id := task["id"].(string)
		waitState(t, a, id, "working")
		_, task, e := rpc(t, a, "", "tasks/cancel", map[string]any{"id": id})
		if e != nil || wireState(task) != "canceled" {
			t.Fatalf("tasks/cancel = %v %v", task, e)
		}
		// The library's task manager forgets a canceled task.
		if _, _, e := rpc(t, a, "", "tasks/get", map[string]any{"id": id}); e == nil {
			t.Errorf("tasks/get after cancel: no error")
		}
		if c := a.Counts(); c.Cancels != 1 || len(c.CanceledTasks) != 1 || c.CanceledTasks[0] != id {
			t.Errorf("counts = %+v", c)
		}
	})
}

func TestStream(t *testing.T) {
	a, err := Start(Options{Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "message/stream",
		"params": message("lost", map[string]any{"scenario": "lost-parcel"}, "", "")})
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var kinds []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Result map[string]any `json:"result"`
		}
		_ = json.Unmarshal([]byte(line), &ev)
		k := fmt.Sprint(ev.Result["kind"])
		if k == "status-update" {
			k += ":" + wireState(ev.Result)
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, " "); got != "task status-update:working status-update:input-required" {
		t.Errorf("stream = %s", got)
	}
}

// TestForget: a forgotten task is the library's TaskNotFound (-32001) over
// HTTP 500.
func TestForget(t *testing.T) {
	a, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, task, _ := rpc(t, a, "", "message/send", message("lost", map[string]any{"scenario": "lost-parcel"}, "", ""))
	id := task["id"].(string)
	waitState(t, a, id, "input-required")
	if err := a.Forget(id); err != nil {
		t.Fatal(err)
	}
	status, _, e := rpc(t, a, "", "tasks/get", map[string]any{"id": id})
	if status != http.StatusInternalServerError || e == nil || e["code"] != float64(-32001) {
		t.Errorf("tasks/get of a forgotten task = HTTP %d %v, want 500 with -32001", status, e)
	}
}

// TestQuestionOnResubscribe: the question is asked when tasks/resubscribe
// arrives, and the new stream does not carry it: its first event is the
// next change (the follow-up's WORKING).
func TestQuestionOnResubscribe(t *testing.T) {
	a, err := Start(Options{Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, task, _ := rpc(t, a, "", "message/send", message("q", map[string]any{"scenario": ScenarioQuestionOnResubscribe}, "", ""))
	id, ctxID := task["id"].(string), task["contextId"].(string)
	waitState(t, a, id, "working")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe", "params": map[string]any{"id": id}})
	req, _ := http.NewRequest(http.MethodPost, a.URL+"/", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tasks/resubscribe = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	waitState(t, a, id, "input-required")
	if _, _, e := rpc(t, a, "", "message/send", message("photo", map[string]any{}, id, ctxID)); e != nil {
		t.Fatal(e)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Result map[string]any `json:"result"`
		}
		_ = json.Unmarshal([]byte(line), &ev)
		if ev.Result["kind"] != "status-update" || wireState(ev.Result) != "working" {
			t.Errorf("first event = %s, want the follow-up's working", line)
		}
		break
	}
	if c := a.Counts(); c.Resubscribes != 1 {
		t.Errorf("counts = %+v", c)
	}
}
