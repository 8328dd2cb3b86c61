package devserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/nexus/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// EnsureNexusEndpoint creates the Nexus endpoint name with a worker
// target: Nexus requests to it go to the workers polling taskQueue in
// namespace targetNamespace. An endpoint of that name that exists already
// (a SQLite file from an earlier run) is left as it is when its target is
// the same, and is updated to that target otherwise.
func (s *Server) EnsureNexusEndpoint(ctx context.Context, name, targetNamespace, taskQueue string) error {
	c, err := s.dial(ctx, "")
	if err != nil {
		return err
	}
	defer c.Close()
	spec := &nexus.EndpointSpec{
		Name: name,
		Target: &nexus.EndpointTarget{Variant: &nexus.EndpointTarget_Worker_{
			Worker: &nexus.EndpointTarget_Worker{Namespace: targetNamespace, TaskQueue: taskQueue},
		}},
	}
	op := c.OperatorService()
	list, err := op.ListNexusEndpoints(ctx, &operatorservice.ListNexusEndpointsRequest{Name: name})
	if err != nil {
		return fmt.Errorf("devserver: listing Nexus endpoints: %w", err)
	}
	for _, ep := range list.GetEndpoints() {
		if ep.GetSpec().GetName() != name {
			continue
		}
		w := ep.GetSpec().GetTarget().GetWorker()
		if w.GetNamespace() == targetNamespace && w.GetTaskQueue() == taskQueue {
			return nil
		}
		if _, err := op.UpdateNexusEndpoint(ctx, &operatorservice.UpdateNexusEndpointRequest{Id: ep.GetId(), Version: ep.GetVersion(), Spec: spec}); err != nil {
			return fmt.Errorf("devserver: updating Nexus endpoint %q: %w", name, err)
		}
		return nil
	}
	if _, err := op.CreateNexusEndpoint(ctx, &operatorservice.CreateNexusEndpointRequest{Spec: spec}); err != nil {
		return fmt.Errorf("devserver: creating Nexus endpoint %q: %w", name, err)
	}
	return nil
}

// EnsureNamespace registers namespace name (one day's retention) unless it
// exists, and waits until the frontend knows it (the server's namespace
// cache refreshes every few seconds).
func (s *Server) EnsureNamespace(ctx context.Context, name string) error {
	c, err := s.dial(ctx, "")
	if err != nil {
		return err
	}
	defer c.Close()
	ws := c.WorkflowService()
	_, err = ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: name, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("devserver: registering namespace %q: %w", name, err)
	}
	for {
		_, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: name})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: namespace %q: %w", name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
