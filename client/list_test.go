package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sdkclient "go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/contracts"
)

func TestListQueryStarter(t *testing.T) {
	q, err := ListQuery(ListOptions{Starter: "alice@example.com", A2AState: "working"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(q, `DelegationStarter = "alice@example.com"`) || !strings.Contains(q, `A2AState = "working"`) {
		t.Fatalf("ListQuery = %s", q)
	}
	for _, bad := range []string{`a" OR WorkflowType != "x`, `a\b`, "a\nb", "a\u202eb", strings.Repeat("a", 201)} {
		if _, err := ListQuery(ListOptions{Starter: bad}); err == nil {
			t.Errorf("ListQuery(Starter %q) = nil error, want a refusal", bad)
		}
	}
}

// A starter that is not a valid DelegationStarter is refused before
// anything is sent (the client below dials nothing).
func TestStartRefusesBadStarter(t *testing.T) {
	c, err := sdkclient.NewLazyClient(sdkclient.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := contracts.Delegation{LocalWorkflowID: "x-1", AgentCardURL: "http://127.0.0.1:9999", Skill: "s", Purpose: "p",
		Message: contracts.MessageSpec{Text: "t"}, AllowedOutputs: []string{"k"}, Deadline: time.Now().Add(time.Hour), WriteAuthority: "none"}
	_, err = Start(context.Background(), c, d, WithStarter(`al"ice`))
	var fe *contracts.FieldError
	if !errors.As(err, &fe) || fe.Field != "(starter)" {
		t.Fatalf("Start(starter al\"ice) error = %v, want a FieldError on (starter)", err)
	}
}
