package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// Interceptor is the worker interceptor that counts ended delegations
// (DelegationsEnded) for worker.Options.Interceptors.
//
// Where the count is made: once, where the Outcome becomes final, that is
// when the Delegation workflow function returns it (a continue-as-new
// returns an error instead and is not counted). It is counted with
// workflow.GetMetricsHandler, whose handler emits nothing while the
// workflow replays, so that a replay (a worker restart, a cache eviction,
// a query on an ended delegation) does not count it again; and it issues
// no command, so the workflow's histories do not change and the workflow
// package is not touched. (An activity would be retried, and would add a
// command and an event to every delegation's history.)
//
// The workflow's end can also run twice without being a replay: the
// workflow task that returns the Outcome is refused when a Signal or a
// cancel request arrived meanwhile (UnhandledCommand; a cancel with a
// reason sends both), or fails after the count, and the next task runs
// the end again. The run ids counted by this worker are remembered (the
// last MaxCountedRuns), so that the same worker does not count a run
// twice; a second worker that runs that end again would (rare: the task
// goes back to the worker that holds the run).
func (m *Metrics) Interceptor() interceptor.WorkerInterceptor {
	return &endedCounter{counted: newRunSet(MaxCountedRuns)}
}

// MaxCountedRuns is how many counted run ids a worker remembers.
const MaxCountedRuns = 10000

type endedCounter struct {
	interceptor.WorkerInterceptorBase
	counted *runSet
}

func (c *endedCounter) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	if workflow.GetInfo(ctx).WorkflowType.Name != contracts.WorkflowType {
		return next
	}
	return &endedInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, counted: c.counted}
}

type endedInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	counted *runSet
}

func (i *endedInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	res, err := i.Next.ExecuteWorkflow(ctx, in)
	if err != nil {
		return res, err
	}
	var out *contracts.Outcome
	switch o := res.(type) {
	case contracts.Outcome:
		out = &o
	case *contracts.Outcome:
		out = o
	}
	// While replaying, the handler would emit nothing; the run is noted
	// only when it is counted.
	if out != nil && out.Status != "" && !workflow.IsReplaying(ctx) && i.counted.add(workflow.GetInfo(ctx).WorkflowExecution.RunID) {
		CountEnded(ctx, *out)
	}
	return res, err
}

// CountEnded counts out in DelegationsEnded through the workflow's
// metrics handler (replay-safe: nothing while replaying). Labels: the
// Outcome's status and its error's category ("" when none), both from
// closed sets (contracts.Status, contracts.Category).
func CountEnded(ctx workflow.Context, out contracts.Outcome) {
	category := ""
	if out.Error != nil {
		category = string(out.Error.Category)
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{
		"status": string(out.Status), "category": category,
	}).Counter(DelegationsEnded).Inc(1)
}

// WaitingStates are the a2a_state values of WaitingDelegations and
// OldestWaitingSeconds: where a delegation waits for someone.
var WaitingStates = []string{
	string(contracts.TaskStateInputRequired), string(contracts.TaskStateAuthRequired),
	string(contracts.PhaseUnknownOutcome), string(contracts.PhaseCardChanged),
}

// DefaultWaitingInterval is how often WatchWaiting reads visibility when
// not told.
const DefaultWaitingInterval = 30 * time.Second

// MaxWaitingListed bounds how many waiting delegations of one state a
// scan lists to find the oldest (the count, WaitingDelegations, is
// exact: CountWorkflowExecutions).
const MaxWaitingListed = 10000

// WatchWaiting sets WaitingDelegations and OldestWaitingSeconds from
// visibility every interval (0: DefaultWaitingInterval) until ctx ends:
// for each of WaitingStates, CountWorkflowExecutions and
// ListWorkflowExecutions (at most MaxWaitingListed) of the running
// Delegation workflows whose A2AState search attribute is that state (or
// a former spelling of it). Visibility does not say when a delegation
// entered its state: a delegation is timed from the scan that first saw
// it there; those already waiting at this worker's first scan count from
// their run's start. A failed read is logged and leaves the gauges as
// they were. Never called from workflow code.
func (m *Metrics) WatchWaiting(ctx context.Context, c sdkclient.Client, namespace string, interval time.Duration, logger *slog.Logger) {
	if interval <= 0 {
		interval = DefaultWaitingInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	w := &waitingScan{m: m, c: c, ns: namespace, seen: map[string]time.Time{}, logger: logger}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			w.scan(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

type waitingScan struct {
	m      *Metrics
	c      sdkclient.Client
	ns     string
	logger *slog.Logger
	mu     sync.Mutex
	// seen: the time each waiting run (state + run id) was first seen.
	seen    map[string]time.Time
	scanned bool
}

// WaitingQuery is the visibility query of the running delegations in
// a2a_state state.
func WaitingQuery(state string) string {
	spellings := append([]string{state}, contracts.FormerA2AStates[state]...)
	quoted := make([]string, len(spellings))
	for i, s := range spellings {
		quoted[i] = "'" + strings.ReplaceAll(s, "'", "") + "'"
	}
	return fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s IN (%s)",
		contracts.WorkflowType, contracts.SearchAttributeA2AState, strings.Join(quoted, ", "))
}

func (w *waitingScan) scan(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	next := map[string]time.Time{}
	for _, state := range WaitingStates {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, oldest, err := w.read(rctx, state, now, next)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				w.logger.Warn("reading waiting delegations from visibility failed; the waiting gauges keep their last values",
					"a2a_state", state, "error", err)
			}
			// Keep what was seen of this state.
			for k, v := range w.seen {
				if strings.HasPrefix(k, state+"/") {
					next[k] = v
				}
			}
			continue
		}
		w.m.waiting.WithLabelValues(state).Set(float64(n))
		age := 0.0
		if !oldest.IsZero() {
			age = max(now.Sub(oldest).Seconds(), 0)
		}
		w.m.oldest.WithLabelValues(state).Set(age)
	}
	w.seen, w.scanned = next, true
}

// read counts and lists the delegations waiting in state, notes when each
// was first seen in next, and returns the count and the oldest first-seen
// time (zero: none).
func (w *waitingScan) read(ctx context.Context, state string, now time.Time, next map[string]time.Time) (int64, time.Time, error) {
	q := WaitingQuery(state)
	cr, err := w.c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: w.ns, Query: q})
	if err != nil {
		return 0, time.Time{}, err
	}
	var oldest time.Time
	var token []byte
	listed := 0
	for listed < MaxWaitingListed {
		resp, err := w.c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: w.ns, Query: q, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return 0, time.Time{}, err
		}
		for _, ex := range resp.GetExecutions() {
			key := state + "/" + ex.GetExecution().GetRunId()
			since, ok := w.seen[key]
			if !ok {
				since = now
				if !w.scanned && ex.GetStartTime() != nil {
					since = ex.GetStartTime().AsTime()
				}
			}
			next[key] = since
			if oldest.IsZero() || since.Before(oldest) {
				oldest = since
			}
			listed++
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return cr.GetCount(), oldest, nil
}

// runSet remembers the last max run ids added.
type runSet struct {
	mu   sync.Mutex
	max  int
	has  map[string]bool
	ring []string
	next int
}

func newRunSet(max int) *runSet { return &runSet{max: max, has: map[string]bool{}} }

// add notes id and reports whether it was new.
func (s *runSet) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has[id] {
		return false
	}
	if len(s.ring) < s.max {
		s.ring = append(s.ring, id)
	} else {
		delete(s.has, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % s.max
	}
	s.has[id] = true
	return true
}
