package nexusop

import (
	"net/url"
	"strings"
	"testing"

	"github.com/nexus-rpc/sdk-go/nexus"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporalnexus"

	dclient "github.com/a2adelegate/delegate/client"
)

func TestStarter(t *testing.T) {
	link := func(ns, id string) nexus.Link {
		return temporalnexus.ConvertLinkWorkflowEventToNexusLink(&commonpb.Link_WorkflowEvent{Namespace: ns, WorkflowId: id, RunId: "r",
			Reference: &commonpb.Link_WorkflowEvent_EventRef{EventRef: &commonpb.Link_WorkflowEvent_EventReference{EventId: 5, EventType: enumspb.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED}}})
	}
	other := nexus.Link{Type: "example.Other", URL: &url.URL{Scheme: "https", Host: "caller.example", Path: "/x"}}
	for _, c := range []struct {
		name  string
		links []nexus.Link
		want  string
	}{
		{"workflow", []nexus.Link{link("callers", "order-7")}, "nexus:callers/order-7"},
		{"workflow after another link", []nexus.Link{other, link("callers", "order-7")}, "nexus:callers/order-7"},
		{"no workflow", []nexus.Link{other}, "nexus:https://caller.example/x"},
		{"none", nil, "nexus:unknown"},
		{"quote", []nexus.Link{link("callers", `a"b\c`)}, "nexus:callers/a?b?c"},
	} {
		if got := Starter(c.links); got != c.want {
			t.Errorf("%s: Starter = %q, want %q", c.name, got, c.want)
		}
	}
	long := Starter([]nexus.Link{link("callers", strings.Repeat("x", 400))})
	if len(long) > 200 || !dclient.ValidStarter(long) {
		t.Errorf("a long caller id: %d bytes, valid %v; want at most 200, valid", len(long), dclient.ValidStarter(long))
	}
}

func TestNewService(t *testing.T) {
	s, err := NewService()
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != Service || s.Operation(Operation) == nil {
		t.Errorf("service %q, operation %q registered: %v", s.Name, Operation, s.Operation(Operation) != nil)
	}
}
