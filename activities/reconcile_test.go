package activities

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/a2adelegate/delegate/contracts"
)

// reconcileTemporal lists one open delegation, and holds its signal until
// the activity has heartbeat (or the test's deadline).
type reconcileTemporal struct {
	client.Client
	beat chan struct{}
}

func (f *reconcileTemporal) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	return &workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{
		{Execution: &commonpb.WorkflowExecution{WorkflowId: "wf-slow", RunId: "r1"}, StartTime: timestamppb.Now()}}}, nil
}

func (f *reconcileTemporal) SignalWorkflow(ctx context.Context, _, _, _ string, _ any) error {
	select {
	case <-f.beat:
	case <-time.After(30 * time.Second):
	}
	return nil
}

// A pass of ReconcileOpen that takes longer than its heartbeat timeout (a
// minute, workflows.ReconcileDelegations) heartbeats while it signals:
// before, it never did, and Temporal timed out a long pass.
func TestReconcileOpenHeartbeats(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	f := &reconcileTemporal{beat: make(chan struct{})}
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
		if beats.Add(1) == 1 {
			close(f.beat)
		}
	})
	a := &Activities{Temporal: f}
	env.RegisterActivity(a.ReconcileOpen)
	v, err := env.ExecuteActivity(a.ReconcileOpen, contracts.ReconcileInput{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := v.Get(&ids); err != nil || len(ids) != 1 {
		t.Fatalf("signaled %v, %v; want wf-slow", ids, err)
	}
	if beats.Load() == 0 {
		t.Error("ReconcileOpen signaled for 30 s without a heartbeat")
	}
}
