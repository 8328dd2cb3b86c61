package claimsagent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
)

func start(t *testing.T, opts ...func(*Config)) (*Agent, string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	cfg := Config{BaseURL: "http://" + srv.Listener.Addr().String()}
	for _, o := range opts {
		o(&cfg)
	}
	agent := New(cfg)
	srv.Config.Handler = agent
	srv.Start()
	t.Cleanup(srv.Close)
	return agent, srv.URL
}

func dial(t *testing.T, ctx context.Context, base string, binding a2a.TransportProtocol) *sdk.Client {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatalf("Resolve() error = %v", err)
	}
	c, err := sdk.NewFromCard(ctx, card, sdk.WithConfig(sdk.Config{PreferredTransports: []a2a.TransportProtocol{binding}}))
	if err != nil {
		t.Fatalf("NewFromCard() error = %v", err)
	}
	return c
}

func send(t *testing.T, ctx context.Context, c *sdk.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage() = %T, want a Task", res)
	}
	return task
}

func TestCard(t *testing.T) {
	_, base := start(t)
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	if len(card.SupportedInterfaces) != 4 || !card.Capabilities.Streaming || len(card.Skills) != 1 || card.Skills[0].ID != SkillID {
		t.Errorf("card = %+v", card)
	}
}

func TestLostParcelScenario(t *testing.T) {
	for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			agent, base := start(t)
			c := dial(t, ctx, base, binding)
			first := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("my parcel for order B-77 was lost"))
			task := send(t, ctx, c, first)
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("state = %s, want INPUT_REQUIRED", task.Status.State)
			}
			if task.Status.Message == nil || task.Status.Message.Parts[0].Text() != Question {
				t.Errorf("status message = %+v, want the question", task.Status.Message)
			}
			got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
			if err != nil || got.Status.State != a2a.TaskStateInputRequired {
				t.Errorf("GetTask = %v, %v; want INPUT_REQUIRED", got, err)
			}

			// A repeated messageId does not create a second task.
			again := send(t, ctx, c, &a2a.Message{ID: first.ID, Role: a2a.MessageRoleUser, Parts: first.Parts})
			if again.ID != task.ID || agent.TaskCount() != 1 {
				t.Errorf("repeated messageId gave task %s (count %d), want %s (count 1)", again.ID, agent.TaskCount(), task.ID)
			}

			follow := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("photo: box.jpg"))
			done := send(t, ctx, c, follow)
			if done.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("follow-up state = %s, want COMPLETED", done.Status.State)
			}
			if len(done.Artifacts) != 1 || done.Artifacts[0].Name != ArtifactKind {
				t.Fatalf("artifacts = %+v", done.Artifacts)
			}
			data, _ := done.Artifacts[0].Parts[0].Data().(map[string]any)
			if data["order_id"] != "B-77" || data["claim_id"] == "" {
				t.Errorf("artifact data = %v", data)
			}
			if agent.TaskCount() != 1 {
				t.Errorf("task count = %d, want 1", agent.TaskCount())
			}
		})
	}
}

func TestFollowUpMismatchRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, base := start(t)
	c := dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
	task := send(t, ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"order_id": "A-1"})))

	wrongTask := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser, TaskID: "no-such-task", ContextID: task.ContextID, Parts: a2a.ContentParts{a2a.NewTextPart("x")}}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: wrongTask}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("unknown taskId: error = %v, want TaskNotFound (A2A 1.0 §3.4.2)", err)
	}
	wrongCtx := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser, TaskID: task.ID, ContextID: "other-context", Parts: a2a.ContentParts{a2a.NewTextPart("x")}}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: wrongCtx}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("mismatched contextId: error = %v, want InvalidParams (A2A 1.0 §3.4.3)", err)
	}
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("task after refused follow-ups: %v, %v; want still INPUT_REQUIRED", got.Status.State, err)
	}
}

func TestScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		state    a2a.TaskState
		kind     string
	}{
		{ScenarioInstant, a2a.TaskStateCompleted, ArtifactKind},
		{ScenarioFail, a2a.TaskStateFailed, ""},
		{ScenarioWrongKind, a2a.TaskStateCompleted, "refund_issued"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, base := start(t)
			c := dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
			task := send(t, ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"order_id": "A-1", "scenario": tt.scenario})))
			if task.Status.State != tt.state {
				t.Fatalf("state = %s, want %s", task.Status.State, tt.state)
			}
			if tt.kind != "" && (len(task.Artifacts) != 1 || task.Artifacts[0].Name != tt.kind) {
				t.Errorf("artifacts = %+v, want one %s", task.Artifacts, tt.kind)
			}
		})
	}
}

func TestSlowScenarioCancels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, base := start(t)
	c := dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"scenario": ScenarioSlow})),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State.Terminal() {
		t.Fatalf("slow task already %s", task.Status.State)
	}
	canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("CancelTask() error = %v", err)
	}
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("state after cancel = %s", canceled.Status.State)
	}
}

func TestStreamShowsWorkingThenInputRequired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, base := start(t)
	c := dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
	var states []a2a.TaskState
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("order A-1 lost"))}) {
		if err != nil {
			t.Fatalf("stream error = %v", err)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			states = append(states, e.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, e.Status.State)
		}
	}
	want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired}
	if len(states) != len(want) {
		t.Fatalf("states = %v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("states = %v, want %v", states, want)
		}
	}
}

// GRPCOnly: the card lists only the gRPC interfaces (1.0 and 0.3), so a
// client that speaks three bindings must pick gRPC.
func TestGRPCOnlyCard(t *testing.T) {
	a := New(Config{BaseURL: "http://127.0.0.1:9", GRPCURL: "127.0.0.1:10", GRPCOnly: true})
	body, err := a.CardJSON()
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatal(err)
	}
	if len(card.SupportedInterfaces) != 2 {
		t.Fatalf("interfaces = %+v, want the two gRPC ones", card.SupportedInterfaces)
	}
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding != "GRPC" || i.URL != "127.0.0.1:10" {
			t.Errorf("interface %+v, want GRPC at 127.0.0.1:10", i)
		}
	}
}

// The agent serves ListTasks (A2A 1.0 §3.1.4) to its callers, none of
// whom it names: a message's task is found by its messageId in the task's
// history (what a client does after a send whose reply was lost).
func TestListTasksFindsTheTaskOfAMessage(t *testing.T) {
	for _, stateDir := range []string{"", t.TempDir()} {
		_, base := start(t, func(c *Config) { c.StateDir = stateDir })
		ctx := context.Background()
		c := dial(t, ctx, base, a2a.TransportProtocolJSONRPC)
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("lost parcel A-1001"))
		task := send(t, ctx, c, m)
		hist := 5
		list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{HistoryLength: &hist})
		if err != nil {
			t.Fatalf("ListTasks (state dir %q): %v", stateDir, err)
		}
		found := false
		for _, lt := range list.Tasks {
			for _, h := range lt.History {
				if lt.ID == task.ID && h.ID == m.ID {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("ListTasks (state dir %q) = %d tasks, none holding the message", stateDir, len(list.Tasks))
		}
	}
}
