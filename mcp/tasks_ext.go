package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// The MCP 2026-07-28 tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663), which replaced the 2025-11-25 utility (tasks.go) and is not
// wire-compatible with it. The server declares it in server/discover;
// a client declares it in a request's capabilities. The server decides:
// a template tool called by such a client runs as a task (a
// CreateTaskResult, resultType "task", the task bound to the delegation
// as in tasks.go); params.task is ignored.
//
//   - tasks/get is the task, DetailedTask: a "human" template's question
//     as an input request (inputRequests, an elicitation form keyed
//     answer-round-N.M, unique over the task's life) while the client can
//     show forms; the tool result once the delegation ended (completed,
//     isError unless its Outcome is completed: the extension keeps failed
//     for JSON-RPC errors, here a workflow that ended without an
//     Outcome); cancelled once a cancel was requested.
//   - tasks/update carries the human's answer (inputResponses), sent for
//     the round the key names, as the request's actor; it is acknowledged
//     whatever it names (the extension's rule), and a key that is not the
//     pending question's is ignored.
//   - tasks/cancel cancels the delegation, acknowledged whatever it names.
//   - tasks/result and tasks/list do not exist in it (-32601).
//
// No requestState is given: the task is the delegation, in Temporal, and
// the actor comes from the request's authentication, so there is nothing
// to carry between requests.

// TasksExtension is the identifier of the MCP tasks extension (SEP-2663).
const TasksExtension = "io.modelcontextprotocol/tasks"

// extTask is a Task in the extension's shape (ttlMs, always given: null
// for unlimited; pollIntervalMs).
type extTask struct {
	TaskID                   string `json:"taskId"`
	Status                   string `json:"status"`
	StatusMessage            string `json:"statusMessage,omitempty"`
	CreatedAt                string `json:"createdAt"`
	LastUpdatedAt            string `json:"lastUpdatedAt"`
	TTLMs                    *int64 `json:"ttlMs"`
	PollIntervalMilliseconds int64  `json:"pollIntervalMs,omitempty"`
}

func extTaskOf(t Task) extTask {
	return extTask{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage, CreatedAt: t.CreatedAt,
		LastUpdatedAt: t.LastUpdatedAt, PollIntervalMilliseconds: t.PollInterval}
}

// extCreateTaskResult is a tools/call's result when it runs as a task.
type extCreateTaskResult struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
	extTask
}

// extTaskResult is tasks/get's result (DetailedTask).
type extTaskResult struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
	extTask
	InputRequests sdk.InputRequestMap `json:"inputRequests,omitempty"`
	Result        *sdk.CallToolResult `json:"result,omitempty"`
	Error         *jsonrpc.Error      `json:"error,omitempty"`
}

// extAck is the empty acknowledgement of tasks/update and tasks/cancel.
type extAck struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
}

// updateTaskParams are the params of tasks/update.
type updateTaskParams struct {
	sdk.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses sdk.InputResponseMap `json:"inputResponses"`
	RequestState   string               `json:"requestState,omitempty"`
}

// declaresTasks reports whether a request's client capabilities declare
// the extension.
func declaresTasks(c *sdk.ClientCapabilities) bool {
	return c != nil && c.Extensions[TasksExtension] != nil
}

// formsOf reports whether the client capabilities in a request's _meta
// (MCP 2026-07-28: each request carries them) take form elicitation.
func formsOf(meta sdk.Meta) bool {
	raw, err := json.Marshal(meta[sdk.MetaKeyClientCapabilities])
	if err != nil {
		return false
	}
	var c struct {
		Elicitation *struct {
			Form json.RawMessage `json:"form"`
			URL  json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Elicitation == nil {
		return false
	}
	return c.Elicitation.Form != nil || c.Elicitation.URL == nil
}

// extInputKey is the key of the input request for st's pending question:
// its round and how many answers to that round were refused before (by
// the delegation, or by this server: refusedAnswers), so that a key is
// never used for two requests (SEP-2663, "Task Input Requests").
func (s *Server) extInputKey(st contracts.State) string {
	round := st.Question.Round
	n := 1 + s.refusedAnswers(st.LocalWorkflowID, round).n
	for _, a := range st.Answers {
		if a.Round == round && a.Refused != "" {
			n++
		}
	}
	return fmt.Sprintf("answer-round-%d.%d", round, n)
}

// refusal counts the answers to one question that tasks/update carried and
// this server refused before they reached the delegation (empty, over the
// bound), and says why the last was.
type refusal struct {
	n   int
	why string
}

// refusedAnswers is the refusal of question round of delegation id.
func (s *Server) refusedAnswers(id string, round int) refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[declineKey{nil, id, round}]
}

// refuseAnswer records that an answer to round of id was refused, and why.
func (s *Server) refuseAnswer(id string, round int, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refused) >= maxDeclined {
		clear(s.refused)
	}
	k := declineKey{nil, id, round}
	s.refused[k] = refusal{s.refused[k].n + 1, why}
}

// extGet is tasks/get of the extension.
func (s *Server) extGet(ctx context.Context, actor string, p *taskIDParams) (*extTaskResult, error) {
	t, st, running, err := s.ownTask(ctx, actor, p.TaskID, requester{forms: formsOf(p.Meta)})
	if err != nil {
		return nil, err
	}
	id := p.TaskID
	out := &extTaskResult{ResultType: "complete", extTask: extTaskOf(t)}
	switch {
	case t.Status == TaskCancelled:
	case st.Outcome != nil && (!running || terminalTask(t.Status)):
		res := s.stateResult(st, templateOf(id), "the task ended")
		res.IsError = st.Outcome.Status != contracts.StatusCompleted
		out.Status, out.Result = TaskCompleted, res
	case t.Status == TaskFailed:
		out.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: t.StatusMessage + ": " + contracts.Truncate(st.Failure, 500)}
	case t.Status == TaskInputRequired:
		out.StatusMessage = fmt.Sprintf("the remote agent asks (round %d): answer its input request with tasks/update", st.Question.Round)
		if r := s.refusedAnswers(id, st.Question.Round); r.why != "" {
			out.StatusMessage += "; your last answer was refused: " + r.why
		}
		out.InputRequests = sdk.InputRequestMap{s.extInputKey(st): &sdk.ElicitParams{Mode: "form", Message: questionMessage(id, st), RequestedSchema: answerSchema}}
	}
	if terminalTask(out.Status) {
		out.PollIntervalMilliseconds = 0
	}
	return out, nil
}

// extUpdate is tasks/update: the human's answer to the pending question,
// sent for its round as actor (the delegation refuses it if the round
// moved on meanwhile). Acknowledged whatever it names.
func (s *Server) extUpdate(ctx context.Context, actor string, p *updateTaskParams) (*extAck, error) {
	ack := &extAck{ResultType: "complete"}
	// A client that answers an input request took its form.
	t, st, running, err := s.ownTask(ctx, actor, p.TaskID, requester{forms: true})
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return ack, nil // not a task of this actor's: acknowledged all the same
		}
		return nil, err
	}
	if !running || t.Status != TaskInputRequired || st.Question == nil {
		return ack, nil // input_required only for a human template's question
	}
	id, round := p.TaskID, st.Question.Round
	resp, _ := p.InputResponses[s.extInputKey(st)].(*sdk.ElicitResult)
	if resp == nil {
		return ack, nil // no answer to the pending question: others are ignored
	}
	switch resp.Action {
	case "accept":
		text, _ := resp.Content["answer"].(string)
		status, note := s.sendHumanAnswer(id, actor, round, text, "an input request of tasks/update")
		s.o.Logger.Info("mcp: tasks/update", "id", id, "actor", actor, "round", round, "status", status, "note", note)
		if status == FormRefused {
			// tasks/get says so, under a new key (the extension acknowledges
			// every update: this is how a client learns of it).
			s.refuseAnswer(id, round, note)
		}
	case "decline", "cancel":
		s.markDeclined(declineKey{nil, id, round})
		s.o.Logger.Info("mcp: input request "+resp.Action+"d", "id", id, "actor", actor, "round", round)
	}
	return ack, nil
}

// extCancel is tasks/cancel of the extension: the delegation is canceled
// (the remote task with it); acknowledged whatever it names.
func (s *Server) extCancel(ctx context.Context, actor string, p *taskIDParams) (*extAck, error) {
	ack := &extAck{ResultType: "complete"}
	t, _, running, err := s.ownTask(ctx, actor, p.TaskID, requester{})
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return ack, nil
		}
		return nil, err
	}
	if !running || terminalTask(t.Status) {
		return ack, nil
	}
	if err := s.handle(p.TaskID).Cancel(ctx, "by "+actor+" through MCP tasks/cancel"); err != nil && !errors.Is(err, client.ErrReasonNotRecorded) {
		return nil, err
	}
	s.o.Logger.Info("mcp: task cancelled", "id", p.TaskID, "actor", actor)
	return ack, nil
}

// withTasksExtension is a server/discover result declaring the extension
// (the go-sdk's ServerCapabilities can carry it; the server's would
// declare it in every era's initialize too).
type withTasksExtension struct{ *sdk.DiscoverResult }

func (w *withTasksExtension) MarshalJSON() ([]byte, error) {
	return patchJSON(w.DiscoverResult, func(m map[string]json.RawMessage) error {
		var caps map[string]json.RawMessage
		if err := json.Unmarshal(m["capabilities"], &caps); err != nil || caps == nil {
			caps = map[string]json.RawMessage{}
		}
		var ext map[string]json.RawMessage
		if err := json.Unmarshal(caps["extensions"], &ext); err != nil || ext == nil {
			ext = map[string]json.RawMessage{}
		}
		ext[TasksExtension] = json.RawMessage(`{}`)
		var err error
		if caps["extensions"], err = json.Marshal(ext); err != nil {
			return err
		}
		m["capabilities"], err = json.Marshal(caps)
		return err
	})
}
