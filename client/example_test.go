package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// A backend service delegates "open a claim" to a remote agent, lets an
// operator answer the agent's question (here the service answers itself),
// and acts on the validated outputs. The end-to-end test
// TestBackendClient in package e2e runs this flow against a real server.
func Example() {
	ctx := context.Background()
	// Where and how to connect: the Temporal config file's profile and the
	// TEMPORAL_* environment (address, namespace, TLS, API key), or fields.
	c, err := client.Dial(ctx, client.Connection{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	h, err := client.Start(ctx, c, contracts.Delegation{
		LocalWorkflowID: "claim-order-A-1001",
		AgentCardURL:    "http://127.0.0.1:9999/.well-known/agent-card.json",
		Skill:           "open-claim",
		Purpose:         "open a claim for a lost parcel",
		Message:         contracts.MessageSpec{Text: "Order A-1001 never arrived.", Data: json.RawMessage(`{"order_id":"A-1001"}`)},
		AllowedOutputs:  []string{"claim_opened"},
		Deadline:        time.Now().Add(24 * time.Hour),
		WriteAuthority:  contracts.WriteAuthorityNone,
	})
	if err != nil {
		log.Fatal(err)
	}
	// An operator answers the agent's question from the Temporal UI or
	// the CLI while Outcome waits. A backend can answer too, once the
	// question is there (State().Question, or client.List with
	// ListOptions{A2AState: "input-required"}):
	//
	//	h.Answer(ctx, contracts.Answer{Text: "photo: box.jpg", AnsweredBy: "claims-backend"})
	out, err := h.Outcome(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range out.Outputs {
		// Outputs are proposals (authority "none"): apply them under the
		// backend's own rules.
		fmt.Println(o.Kind, string(o.Data))
	}
}
