package e2e

import "go.temporal.io/api/workflowservice/v1"

func listRequest(ns, query string) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query}
}
