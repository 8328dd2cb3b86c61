package client

import (
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
)

// A contract's text cannot add links, HTML, images or headings to the
// UI's summary and details: every value is one inert code span on its line.
func TestStaticMetadataInert(t *testing.T) {
	d := contracts.Delegation{LocalWorkflowID: "claim-1", AgentCardURL: "http://agent/.well-known/agent-card.json", Skill: "open-claim",
		AllowedOutputs: []string{"claim_opened"}, Deadline: time.Now().Add(time.Hour), WriteAuthority: "none"}
	d.Purpose = "[APPROVED](https://evil.example/phish) <img src=\"https://evil.example/i.png\">\n\nINJECTED\n===\n    code `x`"
	d.Skill = "<b>skill</b>"
	sum := StaticSummary(d)
	if strings.ContainsAny(sum, "\n") || !strings.HasPrefix(sum, "``") {
		t.Errorf("summary = %q, want one code span on one line", sum)
	}
	for _, line := range strings.Split(StaticDetails(d), "\n") {
		if strings.HasPrefix(line, "INJECTED") || strings.HasPrefix(line, "===") || strings.HasPrefix(line, "    ") {
			t.Errorf("details line %q comes from the contract's text", line)
		}
		if strings.Contains(line, "evil.example") && !strings.HasPrefix(line, "- Purpose: ``") {
			t.Errorf("details line %q carries the purpose outside a code span", line)
		}
	}
}
