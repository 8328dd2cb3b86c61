package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// MCP tasks (MCP 2025-11-25, "Tasks", SEP-1686): a task-augmented
// tools/call of a template tool starts the delegation and returns at once
// a task bound to it. The task's id is the delegation's local_workflow_id,
// and its state is the delegation's, read from Temporal: nothing is kept
// in this process, so a task outlives the session and the server, and any
// session of the same actor follows it.
//
//   - tasks/get is the task: working, input_required (the remote agent
//     asks, and the template's answer comes from the requestor: its human
//     through tasks/result, or its model through delegation_answer),
//     completed (Outcome completed), failed (any other Outcome), cancelled
//     (a cancel was requested, or the Outcome is canceled).
//   - tasks/result blocks until the task ends and returns the tool result
//     delegation_status would (isError unless completed); meanwhile it puts
//     a "human" template's question to the session's human through
//     elicitation/create, related to the task.
//   - tasks/cancel cancels the delegation (the remote task with it).
//   - tasks/list lists the actor's delegations, newest first, in pages.
//
// go-sdk v1.8.0 implements none of it (go-sdk#626: its
// ServerCapabilities has no tasks, its Tool no execution, its
// CallToolParams no task). This file is the one seam that adds it: the
// receiving middleware tasks (capability, execution.taskSupport, the
// task-augmented call), the custom methods tasks/*, and liftTask, which
// moves a tools/call's params.task into _meta where the middleware reads
// it (the go-sdk drops a member it does not know before any middleware
// runs); every transport the server serves applies liftTask (Connect, the
// HTTP handler).
//
// MCP 2026-07-28 replaced this flow with the tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663, not wire-compatible): a
// request of that version is served without tasks (params.task ignored,
// no tasks capability declared), as the extension prescribes for the
// legacy capability.

// TasksProtocol is the MCP version whose tasks utility the server
// implements: a session of this version gets the tasks capability.
const TasksProtocol = "2025-11-25"

// The tasks/* methods.
const (
	MethodTasksGet    = "tasks/get"
	MethodTasksResult = "tasks/result"
	MethodTasksCancel = "tasks/cancel"
	MethodTasksList   = "tasks/list"
	// MethodTasksUpdate is the 2026-07-28 extension's (SEP-2663).
	MethodTasksUpdate = "tasks/update"
)

// Task statuses (MCP 2025-11-25, Tasks, "Task Status").
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// Keys of _meta.
const (
	// relatedTaskKey associates a message with a task.
	relatedTaskKey = "io.modelcontextprotocol/related-task"
	// immediateResponseKey is the text a host may hand its model at once
	// for a task-augmented tools/call.
	immediateResponseKey = "io.modelcontextprotocol/model-immediate-response"
	// taskMetaKey is where liftTask puts a tools/call's params.task. A
	// client that sets it itself asks for a task as params.task does.
	taskMetaKey = "io.github.a2adelegate/task"
)

// Bounds and cadences of tasks.
const (
	// TaskPollInterval is the pollInterval the server suggests (ms).
	TaskPollInterval = 2000
	// taskPageSize is how many tasks one tasks/list page holds.
	taskPageSize = 20
	// taskListCost is what one tasks/list is charged against the actor's
	// rate (Options.Rate): a page reads up to taskPageSize delegations.
	taskListCost = 5
	// taskReadEvery is how often, at most, a blocked tasks/result reads
	// the delegation's state with Query "state" when nothing changed on
	// the server in between (it reads the workflow's status every
	// pollEvery).
	taskReadEvery = 5 * time.Second
)

// Task is an MCP task (MCP 2025-11-25, Tasks, "Task"): one delegation.
type Task struct {
	// TaskID is the delegation's local_workflow_id.
	TaskID string `json:"taskId"`
	// Status is working, input_required, completed, failed or cancelled.
	Status string `json:"status"`
	// StatusMessage says, in this server's words (never the remote
	// agent's), why the task is in Status and what answers it.
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt is when the delegation started; LastUpdatedAt its last
	// change (RFC 3339, UTC).
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTL is always null: a task lives as long as its delegation is kept
	// by Temporal (until the deadline, then the namespace's retention),
	// whatever ttl the request asked for.
	TTL *int64 `json:"ttl"`
	// PollInterval is the suggested time between tasks/get (ms); absent
	// once the task ended.
	PollInterval int64 `json:"pollInterval,omitempty"`
}

// taskIDParams are the params of tasks/get, tasks/result, tasks/cancel.
type taskIDParams struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

// listTasksParams are the params of tasks/list.
type listTasksParams struct {
	sdk.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// taskResult is the result of tasks/get and tasks/cancel: the task.
type taskResult struct {
	sdk.ResultBase
	Task
}

// createTaskResult is a task-augmented tools/call's result.
type createTaskResult struct {
	sdk.ResultBase
	Task Task `json:"task"`
}

// listTasksResult is the result of tasks/list.
type listTasksResult struct {
	sdk.ResultBase
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// taskCallKey marks the context of a task-augmented tools/call.
type taskCallKey struct{}

// asTask reports whether ctx serves a task-augmented tools/call.
func asTask(ctx context.Context) bool { return ctx.Value(taskCallKey{}) != nil }

// actorKey carries the request's actor to the tasks/* handlers (the
// go-sdk hands a custom method's handler no RequestExtra).
type actorKey struct{}

// invalidParams is a JSON-RPC -32602 error.
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// taskNotFound is the one error for a task id that names no delegation of
// the actor's (MCP 2025-11-25, Tasks, "Protocol Errors").
func taskNotFound(id string) error {
	return invalidParams("Failed to retrieve task: Task not found: no delegation of yours has taskId %s", strconv.Quote(contracts.Truncate(id, 200)))
}

// addTasks registers the tasks/* methods and the middleware on srv. Each
// is served by the era the request's session speaks (the tasks
// middleware puts it in the context): the 2025-11-25 utility, or the
// 2026-07-28 extension (tasks_ext.go).
func (s *Server) addTasks(srv *sdk.Server) {
	must := func(err error) {
		if err != nil {
			panic(err) // a go-sdk that made a tasks method standard: tasks.go must change
		}
	}
	must(sdk.AddReceivingCustomMethod(srv, MethodTasksGet, func(ctx context.Context, ss *sdk.ServerSession, p *taskIDParams) (sdk.Result, error) {
		if eraOf(ctx) == eraExtension {
			return s.extGet(ctx, actorOf(ctx), orEmpty(p))
		}
		return s.taskGet(ctx, ss, actorOf(ctx), orEmpty(p))
	}))
	must(sdk.AddReceivingCustomMethod(srv, MethodTasksResult, func(ctx context.Context, ss *sdk.ServerSession, p *taskIDParams) (sdk.Result, error) {
		return s.taskPayload(ctx, ss, actorOf(ctx), orEmpty(p))
	}))
	must(sdk.AddReceivingCustomMethod(srv, MethodTasksCancel, func(ctx context.Context, ss *sdk.ServerSession, p *taskIDParams) (sdk.Result, error) {
		if eraOf(ctx) == eraExtension {
			return s.extCancel(ctx, actorOf(ctx), orEmpty(p))
		}
		return s.taskCancel(ctx, ss, actorOf(ctx), orEmpty(p))
	}))
	must(sdk.AddReceivingCustomMethod(srv, MethodTasksList, func(ctx context.Context, ss *sdk.ServerSession, p *listTasksParams) (sdk.Result, error) {
		return s.taskList(ctx, ss, actorOf(ctx), orEmpty(p))
	}))
	must(sdk.AddReceivingCustomMethod(srv, MethodTasksUpdate, func(ctx context.Context, _ *sdk.ServerSession, p *updateTaskParams) (sdk.Result, error) {
		return s.extUpdate(ctx, actorOf(ctx), orEmpty(p))
	}))
}

// orEmpty is p, or its zero value for a request without params (or
// params null).
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

func actorOf(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// The eras of MCP tasks a request may be served in.
type era int

const (
	eraNone      era = iota
	eraUtility       // MCP 2025-11-25, the tasks utility (this file)
	eraExtension     // MCP 2026-07-28, the tasks extension (tasks_ext.go)
)

// eraKey carries a tasks/* request's era to its handler.
type eraKey struct{}

func eraOf(ctx context.Context) era {
	e, _ := ctx.Value(eraKey{}).(era)
	return e
}

// versionOf is the MCP version session ss speaks: the one its initialize
// negotiated (recorded by the tasks middleware: the go-sdk keeps only the
// version the client asked for, which may be one it does not speak), or,
// at MCP 2026-07-28 (no initialize), its requests' own.
func (s *Server) versionOf(ss *sdk.ServerSession) string {
	if ss == nil {
		return ""
	}
	if v, ok := s.negotiated.Load(ss); ok {
		return v.(string)
	}
	if p := ss.InitializeParams(); p != nil {
		return p.ProtocolVersion
	}
	return ""
}

// eraOfRequest is the era of req's session (versionOf).
func (s *Server) eraOfRequest(req sdk.Request) era {
	ss, _ := req.GetSession().(*sdk.ServerSession)
	switch v := s.versionOf(ss); {
	case v >= ModernProtocol:
		return eraExtension
	case v == TasksProtocol:
		return eraUtility
	}
	return eraNone
}

// methodsOf are the tasks/* methods each era serves.
var methodsOf = map[era][]string{
	eraUtility:   {MethodTasksGet, MethodTasksResult, MethodTasksCancel, MethodTasksList},
	eraExtension: {MethodTasksGet, MethodTasksUpdate, MethodTasksCancel},
}

// tasks is the receiving middleware of MCP tasks (see the top of this
// file): the actor and era of a tasks/* request, checked and rate limited
// as a tool call's (a method its era does not have is -32601); the tasks
// capability in a TasksProtocol initialize result, the extension in a
// server/discover result; execution.taskSupport "optional" on each
// template tool; and a task-augmented tools/call, which a template tool
// answers with a task and any other tool refuses with -32601 (its
// taskSupport is forbidden).
func (s *Server) tasks(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case MethodTasksGet, MethodTasksResult, MethodTasksCancel, MethodTasksList, MethodTasksUpdate:
			actor := s.o.Actor
			if actor == "" {
				if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
					actor = ex.TokenInfo.UserID
				}
			}
			if actor == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no authenticated actor"}
			}
			e := s.eraOfRequest(req)
			if !slices.Contains(methodsOf[e], method) {
				// go-sdk v1.8.0 writes its own message for every -32601.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method + ": not a method of this session's MCP version's tasks"}
			}
			cost := 1
			if method == MethodTasksList {
				cost = taskListCost
			}
			if !s.limiter(actor).AllowN(time.Now(), cost) {
				s.o.Logger.Warn("mcp: rate limited", "actor", actor, "method", method)
				return nil, limited("rate limit: %s makes more than %g requests a second (burst %d); wait and call again", actor, float64(s.o.Rate), s.o.Burst)
			}
			res, err := next(context.WithValue(context.WithValue(ctx, actorKey{}, actor), eraKey{}, e), method, req)
			var je *jsonrpc.Error
			if err != nil && !errors.As(err, &je) && ctx.Err() == nil {
				// Not a refusal: Temporal (or the worker) failed.
				s.o.Logger.Error("mcp: tasks request failed", "method", method, "actor", actor, "err", err)
			}
			return res, err
		case "initialize":
			res, err := next(ctx, method, req)
			ir, ok := res.(*sdk.InitializeResult)
			if !ok || err != nil {
				return res, err
			}
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok && ss != nil {
				if _, dup := s.negotiated.LoadOrStore(ss, ir.ProtocolVersion); !dup {
					go func() {
						_ = ss.Wait()
						s.negotiated.Delete(ss)
					}()
				}
			}
			if ir.ProtocolVersion == TasksProtocol {
				return &withTasksCapability{ir}, nil
			}
			return res, err
		case "server/discover":
			res, err := next(ctx, method, req)
			if dr, ok := res.(*sdk.DiscoverResult); ok && err == nil {
				return &withTasksExtension{dr}, nil
			}
			return res, err
		case "tools/list":
			res, err := next(ctx, method, req)
			if lr, ok := res.(*sdk.ListToolsResult); ok && err == nil && s.eraOfRequest(req) != eraNone {
				return &withTaskSupport{lr, s.templates}, nil
			}
			return res, err
		case "tools/call":
			r, ok := req.(*sdk.CallToolRequest)
			if !ok || r.Params == nil {
				return next(ctx, method, req)
			}
			task, asked := r.Params.Meta[taskMetaKey]
			delete(r.Params.Meta, taskMetaKey)
			switch s.eraOfRequest(req) {
			case eraUtility:
				if !asked {
					return next(ctx, method, req)
				}
				if why := taskParamProblem(task); why != "" {
					return nil, invalidParams("%s", why)
				}
				t, err := s.startTask(ctx, method, r, next)
				if err != nil {
					return nil, err
				}
				return &createTaskResult{
					ResultBase: sdk.ResultBase{Meta: sdk.Meta{immediateResponseKey: fmt.Sprintf(
						"Delegation %s started as a task (template %s); its result comes when the remote agent is done. Its id is a delegation id: delegation_status reads it too.", t.TaskID, r.Params.Name)}},
					Task: t,
				}, nil
			case eraExtension:
				// The server decides (SEP-2663): every template tool runs as
				// a task for a client that declared the extension on the
				// request; params.task is ignored. A retry that carries an
				// input request's answer is the plain call's.
				if s.templates[r.Params.Name] == nil || r.Params.RequestState != "" || !declaresTasks(r.ClientCapabilities()) {
					return next(ctx, method, req)
				}
				t, err := s.startTask(ctx, method, r, next)
				var refused *refusedCall
				if errors.As(err, &refused) {
					// Refused before any delegation started: the tool's
					// error, as without the extension (the server decides;
					// a refused argument is a tool error the model reads).
					return refused.result, nil
				}
				if err != nil {
					return nil, err
				}
				return &extCreateTaskResult{ResultType: "task", extTask: extTaskOf(t)}, nil
			}
			// No tasks in this session's version: the call is served as a
			// plain one (MCP 2025-11-25, Tasks, "Task Support and
			// Handling").
			return next(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}

// taskParamProblem says what is wrong with a tools/call's task parameter
// ("" for nothing): an object whose ttl, when given, is a number of
// milliseconds, 0 or more.
func taskParamProblem(task any) string {
	m, ok := task.(map[string]any)
	if !ok {
		return fmt.Sprintf("task: must be an object ({} or {\"ttl\": MILLISECONDS}), not %s", contracts.Truncate(fmt.Sprint(task), 40))
	}
	if ttl, ok := m["ttl"]; ok {
		n, ok := ttl.(float64)
		if num, isNum := ttl.(json.Number); isNum {
			f, err := num.Float64()
			n, ok = f, err == nil
		}
		if !ok || n < 0 {
			return fmt.Sprintf("task.ttl: must be a number of milliseconds, 0 or more, not %s", contracts.Truncate(fmt.Sprint(ttl), 40))
		}
	}
	return ""
}

// startTask serves a task-augmented tools/call: the template tool starts
// the delegation (every check of a plain call) and returns its task,
// working. A refused call is a -32602 error naming the argument and the
// rule: no task was created.
func (s *Server) startTask(ctx context.Context, method string, r *sdk.CallToolRequest, next sdk.MethodHandler) (Task, error) {
	name := r.Params.Name
	if s.templates[name] == nil {
		// go-sdk v1.8.0 writes its own message for every -32601 ("method
		// not found: \"tools/call\""): the log says why.
		s.o.Logger.Info("mcp: refused: a task-augmented call of a tool that does not run as a task", "tool", contracts.Truncate(name, 100))
		return Task{}, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("tool %q does not run as a task (its execution.taskSupport is forbidden): call it without task; only template tools run as tasks", contracts.Truncate(name, 100))}
	}
	res, err := next(context.WithValue(ctx, taskCallKey{}, true), method, r)
	if err != nil {
		return Task{}, err
	}
	cr, _ := res.(*sdk.CallToolResult)
	if cr == nil {
		return Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tools/call returned no tool result"}
	}
	out, _ := cr.StructuredContent.(Result)
	if cr.IsError || out.LocalWorkflowID == "" {
		return Task{}, &refusedCall{invalidParams("no task was created: %s", contracts.Truncate(resultText(cr), 1000)), cr}
	}
	// createdAt is the start event's time, as tasks/get says it.
	created := time.Now()
	if d, err := s.handle(out.LocalWorkflowID).Describe(ctx); err == nil && !d.StartTime.IsZero() {
		created = d.StartTime
	}
	at := created.UTC().Format(time.RFC3339Nano)
	return Task{TaskID: out.LocalWorkflowID, Status: TaskWorking, StatusMessage: "the delegation started: follow it with tasks/get",
		CreatedAt: at, LastUpdatedAt: at, PollInterval: TaskPollInterval}, nil
}

// refusedCall is startTask's error for a call the tool refused: the
// -32602 it is (to a task-augmented call of the 2025-11-25 utility), and
// the tool's own result (what the 2026-07-28 extension answers).
type refusedCall struct {
	err    error
	result *sdk.CallToolResult
}

func (e *refusedCall) Error() string { return e.err.Error() }
func (e *refusedCall) Unwrap() error { return e.err }

// resultText is the text content of a tool result.
func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// withTasksCapability is an initialize result with the tasks capability
// (MCP 2025-11-25, Tasks, "Server Capabilities"), which the go-sdk's
// ServerCapabilities cannot carry.
type withTasksCapability struct{ *sdk.InitializeResult }

func (w *withTasksCapability) MarshalJSON() ([]byte, error) {
	return patchJSON(w.InitializeResult, func(m map[string]json.RawMessage) error {
		var caps map[string]json.RawMessage
		if err := json.Unmarshal(m["capabilities"], &caps); err != nil || caps == nil {
			caps = map[string]json.RawMessage{}
		}
		caps["tasks"] = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)
		b, err := json.Marshal(caps)
		m["capabilities"] = b
		return err
	})
}

// withTaskSupport is a tools/list result whose template tools declare
// execution.taskSupport "optional" (MCP 2025-11-25, Tasks, "Tool-Level
// Negotiation"), which the go-sdk's Tool cannot carry; the fixed tools
// declare none (forbidden).
type withTaskSupport struct {
	*sdk.ListToolsResult
	templates map[string]*template
}

func (w *withTaskSupport) MarshalJSON() ([]byte, error) {
	return patchJSON(w.ListToolsResult, func(m map[string]json.RawMessage) error {
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(m["tools"], &tools); err != nil {
			return err
		}
		for _, t := range tools {
			var name string
			if json.Unmarshal(t["name"], &name) == nil && w.templates[name] != nil {
				t["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
			}
		}
		b, err := json.Marshal(tools)
		m["tools"] = b
		return err
	})
}

// patchJSON marshals v, lets patch change its members, and marshals
// the result again (each member's text kept as it was).
func patchJSON(v any, patch func(map[string]json.RawMessage) error) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if err := patch(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// requester is who asks about a task: whether its client puts a form to
// its human (forms), and its session (a 2025-11-25 session's human
// declines questions for that session).
type requester struct {
	session *sdk.ServerSession
	forms   bool
}

// sessionRequester is the requester of a 2025-11-25 session.
func sessionRequester(ss *sdk.ServerSession) requester { return requester{ss, canElicit(ss)} }

// ownTask reads task id of actor, as who sees it: the task, the
// delegation's state, and whether its workflow still runs. A delegation
// of another actor reads as one that does not exist (-32602). A running
// delegation whose state no worker reads now is a working task that says
// so.
func (s *Server) ownTask(ctx context.Context, actor, id string, who requester) (Task, contracts.State, bool, error) {
	if id == "" {
		return Task{}, contracts.State{}, false, invalidParams("taskId: required: the task's id (a delegation's local_workflow_id)")
	}
	if !contracts.ValidWorkflowID(id) {
		return Task{}, contracts.State{}, false, taskNotFound(id)
	}
	d, err := s.handle(id).Describe(ctx)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return Task{}, contracts.State{}, false, taskNotFound(id)
		}
		return Task{}, contracts.State{}, false, err
	}
	if d.WorkflowType != contracts.WorkflowType || d.Starter != actor {
		return Task{}, contracts.State{}, false, taskNotFound(id)
	}
	// An ended delegation's state is its Outcome: read from its history,
	// not by a Query (which replays it on a worker).
	var st contracts.State
	if d.Running() {
		st, err = s.state(ctx, id)
	} else {
		st, err = s.endedState(ctx, id, d.Status)
	}
	unread := ""
	if err != nil {
		if !d.Running() || ctx.Err() != nil {
			return Task{}, contracts.State{}, false, err
		}
		st = contracts.State{LocalWorkflowID: id, A2AState: contracts.CurrentA2AState(d.A2AState)}
		unread = "; its state is not readable now (" + contracts.Truncate(err.Error(), 300) + ")"
	}
	t := s.taskOf(ctx, id, d, st, who)
	t.StatusMessage += unread
	return t, st, d.Running(), nil
}

// taskOf is delegation id as a task for who, from its description and
// state. createdAt is its first run's start (the start event's time, as
// a task-augmented call returned it); lastUpdatedAt its last transition,
// question, answer or end.
func (s *Server) taskOf(ctx context.Context, id string, d client.Described, st contracts.State, who requester) Task {
	created := d.StartTime
	if d.FirstRunID != "" && d.FirstRunID != d.RunID {
		if first, err := s.o.Client.DescribeWorkflowExecution(ctx, id, d.FirstRunID); err == nil && first.GetWorkflowExecutionInfo().GetStartTime() != nil {
			created = first.GetWorkflowExecutionInfo().GetStartTime().AsTime()
		} else if !st.StartedAt.IsZero() {
			created = st.StartedAt
		}
	}
	updated := created
	later := func(t time.Time) {
		if t.After(updated) {
			updated = t
		}
	}
	if n := len(st.Transitions); n > 0 {
		later(st.Transitions[n-1].At)
	}
	if st.Question != nil {
		later(st.Question.Since)
	}
	if n := len(st.Answers); n > 0 {
		later(st.Answers[n-1].At)
	}
	later(d.CloseTime)
	t := Task{TaskID: id, CreatedAt: created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: updated.UTC().Format(time.RFC3339Nano)}
	t.Status, t.StatusMessage = s.taskStatus(id, d, st, who)
	if !terminalTask(t.Status) {
		t.PollInterval = TaskPollInterval
	}
	return t
}

// terminalTask reports whether a task status is terminal.
func terminalTask(status string) bool {
	return status == TaskCompleted || status == TaskFailed || status == TaskCancelled
}

// taskStatus maps a delegation onto a task status and says why. A cancel
// once requested keeps the task cancelled, whatever the delegation does
// next (MCP 2025-11-25, Tasks, "Task Cancellation"). A question is
// input_required only when who can answer it: a "human" template's, put
// to who's human through a form (tasks/result's elicitation, or the
// extension's input request) and not declined; any other waits for
// someone else, and the task is working, saying who.
func (s *Server) taskStatus(id string, d client.Described, st contracts.State, who requester) (string, string) {
	if o := st.Outcome; o != nil {
		switch {
		case o.Status == contracts.StatusCanceled || o.Status == contracts.StatusCancelUnconfirmed:
			return TaskCancelled, fmt.Sprintf("the delegation was canceled (outcome %s)", o.Status)
		case st.CancelReason != "":
			return TaskCancelled, fmt.Sprintf("a cancel was requested; the delegation then ended %s (its result has the outcome)", o.Status)
		case o.Status == contracts.StatusCompleted:
			return TaskCompleted, fmt.Sprintf("outcome completed: %d output(s) passed the contract", len(o.Outputs))
		}
		msg := "outcome " + string(o.Status)
		if o.Error != nil {
			msg += " [" + string(o.Error.Category) + "]"
		}
		return TaskFailed, msg + " (the task's result has the outcome and why)"
	}
	if st.Failure != "" || (!d.Running() && d.Status != "canceled") {
		return TaskFailed, "the delegation's workflow ended " + d.Status + " without an outcome"
	}
	if st.CancelReason != "" || d.Status == "canceled" {
		return TaskCancelled, "a cancel was requested: the remote task is being canceled"
	}
	if q := st.Question; q != nil && !answeredRound(st, q.Round) {
		operator := " (Temporal UI or `delegate answer`)"
		if q.State != contracts.TaskStateInputRequired {
			return TaskWorking, fmt.Sprintf("the remote agent asks for authentication (round %d): only an operator answers it%s", q.Round, operator)
		}
		t, _ := s.served(id, st)
		switch {
		case t == nil:
			return TaskWorking, fmt.Sprintf("the remote agent asks (round %d); an operator answers it%s", q.Round, operator)
		case t.Answer == AnswerModel:
			return TaskWorking, fmt.Sprintf("the remote agent asks (round %d): the model answers it with %s (the question: %s)", q.Round, ToolAnswer, ToolStatus)
		case s.isDeclined(declineKey{nil, id, q.Round}) || (who.session != nil && s.isDeclined(declineKey{who.session, id, q.Round})):
			return TaskWorking, fmt.Sprintf("the remote agent asks (round %d); your human declined it (it is not asked again here): an operator answers it%s", q.Round, operator)
		case !who.forms:
			return TaskWorking, fmt.Sprintf("the remote agent asks (round %d); this client takes no form elicitation, so its human cannot be asked: an operator answers it%s", q.Round, operator)
		}
		return TaskInputRequired, fmt.Sprintf("the remote agent asks (round %d): your human answers it through a form (elicitation)", q.Round)
	}
	if st.Unknown != nil {
		return TaskWorking, "a send's outcome is unknown: an operator resolves it"
	}
	return TaskWorking, "a2a_state " + st.A2AState
}

// taskGet is tasks/get.
func (s *Server) taskGet(ctx context.Context, ss *sdk.ServerSession, actor string, p *taskIDParams) (*taskResult, error) {
	t, _, _, err := s.ownTask(ctx, actor, p.TaskID, sessionRequester(ss))
	if err != nil {
		return nil, err
	}
	return &taskResult{Task: t}, nil
}

// taskCancel is tasks/cancel: the delegation is canceled (its remote task
// with it) and the task is cancelled from then on. An ended task is
// refused with -32602.
func (s *Server) taskCancel(ctx context.Context, ss *sdk.ServerSession, actor string, p *taskIDParams) (*taskResult, error) {
	t, _, running, err := s.ownTask(ctx, actor, p.TaskID, sessionRequester(ss))
	if err != nil {
		return nil, err
	}
	if terminalTask(t.Status) || !running {
		return nil, invalidParams("Cannot cancel task %s: it is already in terminal status %s", p.TaskID, t.Status)
	}
	if err := s.handle(p.TaskID).Cancel(ctx, "by "+actor+" through MCP tasks/cancel"); err != nil && !errors.Is(err, client.ErrReasonNotRecorded) {
		return nil, err
	}
	s.o.Logger.Info("mcp: task cancelled", "id", p.TaskID, "actor", actor)
	t.Status, t.StatusMessage, t.PollInterval = TaskCancelled, "cancelled by request: the remote task is being canceled", 0
	return &taskResult{Task: t}, nil
}

// taskPayload is tasks/result: it blocks until the task ends (the
// delegation's workflow too), then returns the tool result
// delegation_status would, related to the task, isError unless the task
// completed. While it waits, a "human" template's question is put to the
// session's human through elicitation/create (related to the task; its
// answer is sent for the round it showed, whenever it comes while the
// session lives), and notifications/progress go out when the request
// gave a progress token. At most MaxWaitingPerActor calls of an actor
// wait at once (tools that wait included).
func (s *Server) taskPayload(ctx context.Context, ss *sdk.ServerSession, actor string, p *taskIDParams) (*sdk.CallToolResult, error) {
	id := p.TaskID
	who := sessionRequester(ss)
	t, st, running, err := s.ownTask(ctx, actor, id, who)
	if err != nil {
		return nil, err
	}
	related := sdk.Meta{relatedTaskKey: map[string]any{"taskId": id}}
	if running {
		release, ok := s.startWaiting(actor)
		if !ok {
			return nil, limited("%s: %d calls of yours already wait at once (the most there can be); poll with tasks/get and call tasks/result again later", MethodTasksResult, MaxWaitingPerActor)
		}
		defer release()
		var tok any
		if p.Meta != nil {
			tok = p.Meta["progressToken"]
		}
		prog := startProgress(ctx, ss, tok, "following delegation "+id)
		defer prog.end()
		ctx, done := s.h.enter(ctx, ss, actor)
		defer done()
		for running {
			prog.say(t.StatusMessage)
			wait := time.Now().Add(taskReadEvery)
			if t.Status == TaskInputRequired && st.Question != nil {
				// The form stays with the session; this waits for it at
				// most until wait, then reads the state again.
				if _, _, _, err := s.askHuman(ctx, ss, related, actor, id, st, wait); err != nil {
					return nil, err
				}
			}
			if err := s.untilChange(ctx, id, wait); err != nil {
				return nil, err
			}
			if t, st, running, err = s.ownTask(ctx, actor, id, who); err != nil {
				return nil, err
			}
		}
	}
	res := s.stateResult(st, templateOf(id), "the task "+t.Status)
	res.IsError = t.Status != TaskCompleted
	res.Meta = related
	return res, nil
}

// untilChange waits until deadline, or until the delegation's workflow
// ends or its A2AState changes (DescribeWorkflowExecution every
// pollEvery: no worker involved).
func (s *Server) untilChange(ctx context.Context, id string, deadline time.Time) error {
	first, err := s.handle(id).Describe(ctx)
	if err != nil {
		return nil // the caller reads it again, and says why
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
		d, err := s.handle(id).Describe(ctx)
		if err != nil || d.Status != first.Status || d.A2AState != first.A2AState {
			return nil
		}
	}
	return nil
}

// taskList is tasks/list: the actor's delegations, newest first, at most
// taskPageSize a page. The cursor is the visibility store's page token
// (ListWorkflowExecutions), sealed by this server with the actor's name
// (a cursor it did not give, another actor's, or one from before a
// restart is refused with -32602).
func (s *Server) taskList(ctx context.Context, ss *sdk.ServerSession, actor string, p *listTasksParams) (*listTasksResult, error) {
	var token []byte
	if p.Cursor != "" {
		var c listCursor
		if !s.h.openJSON(p.Cursor, &c) || c.Kind != MethodTasksList || c.Actor != actor || len(c.Token) == 0 {
			return nil, invalidParams("cursor: not one this server gave you (a nextCursor of tasks/list, unchanged; one from before the server restarted is not known): list again without it")
		}
		token = c.Token
	}
	query, err := client.ListQuery(client.ListOptions{Starter: actor})
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	lctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	resp, err := s.o.Client.ListWorkflow(lctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: s.o.Namespace, PageSize: taskPageSize, Query: query, NextPageToken: token})
	if err != nil {
		return nil, err
	}
	out := &listTasksResult{Tasks: []Task{}}
	for _, ex := range resp.GetExecutions() {
		id := ex.GetExecution().GetWorkflowId()
		if !contracts.ValidWorkflowID(id) {
			continue // not a local_workflow_id: no task is
		}
		t, _, _, err := s.ownTask(ctx, actor, id, sessionRequester(ss))
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				continue // gone since it was listed
			}
			return nil, err
		}
		out.Tasks = append(out.Tasks, t)
	}
	if len(resp.GetNextPageToken()) > 0 {
		out.NextCursor = s.h.sealJSON(listCursor{Kind: MethodTasksList, Actor: actor, Token: resp.GetNextPageToken()})
	}
	return out, nil
}

// listCursor is what a tasks/list cursor says, sealed (humans.sealJSON).
type listCursor struct {
	Kind  string `json:"k"`
	Actor string `json:"a"`
	Token []byte `json:"t"`
}
