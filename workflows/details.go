package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/a2adelegate/delegate/contracts"
)

// details sets the current details shown in the Temporal UI for the
// state the delegation is in (a pending question shows its own).
func (r *run) details(ctx workflow.Context) {
	if r.s.Question != nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · remote state `%s` · deadline %s", contracts.InertMarkdown(r.d.Purpose), r.s.A2AState, r.d.Deadline.UTC().Format(time.RFC3339))
	if contracts.TaskState(r.s.A2AState) == contracts.TaskStateUnknown && r.s.LastSnapshot != nil {
		fmt.Fprintf(&b, "\n\nThe agent sent a task state this client cannot read: `%s` (shown as is; the task is still followed).",
			contracts.InertMarkdown(contracts.Truncate(r.s.LastSnapshot.RawState, 200)))
	}
	ignoredNote(&b, r.s)
	if rt := r.s.Retrying; rt != nil {
		fmt.Fprintf(&b, "\n\n**Retrying %s** (attempt %d since %s, next at %s): %s", rt.Op, rt.Attempts,
			rt.Since.UTC().Format(time.RFC3339), rt.Next.UTC().Format(time.RFC3339), contracts.InertMarkdown(contracts.Truncate(rt.LastError, 500)))
		if rt.HandedOver {
			b.WriteString("\n\nTemporal now retries it every 5 minutes at most until the deadline; the pending activity shows each attempt's failure.")
		}
	}
	workflow.SetCurrentDetails(ctx, b.String())
}

func questionDetails(d contracts.Delegation, s *contracts.State, wfID string) string {
	q := s.Question
	var b strings.Builder
	fmt.Fprintf(&b, "## Waiting for input (round %d)\n\n", q.Round)
	fmt.Fprintf(&b, "**%s** asks, since %s (remote state `%s`):\n\n", contracts.InertMarkdown(s.Agent.Name), q.Since.UTC().Format(time.RFC3339), q.State)
	for _, line := range strings.Split(contracts.Truncate(q.Text, 2000), "\n") {
		fmt.Fprintf(&b, "> %s\n", contracts.InertMarkdown(line))
	}
	fmt.Fprintf(&b, "\nPurpose: %s · deadline %s\n\n", contracts.InertMarkdown(d.Purpose), d.Deadline.UTC().Format(time.RFC3339))
	b.WriteString("**How to answer:** send Signal or Update `provide-input` with\n\n")
	b.WriteString("```json\n{\"text\": \"...\", \"answered_by\": \"your name\"}\n```\n\n")
	fmt.Fprintf(&b, "or run `delegate answer %s --text \"...\" --by \"your name\"`.\n", wfID)
	ignoredNote(&b, s)
	return b.String()
}

// ignoredNote shows the last signal payload that was not applied.
func ignoredNote(b *strings.Builder, s *contracts.State) {
	if n := len(s.IgnoredSignals); n > 0 {
		last := s.IgnoredSignals[n-1]
		fmt.Fprintf(b, "\n\n**Not applied:** Signal `%s` at %s (%d ignored in all): %s. Payload: %s",
			last.Name, last.Time.UTC().Format(time.RFC3339), s.IgnoredSignalCount, contracts.InertMarkdown(last.Reason), contracts.InertMarkdown(contracts.Truncate(last.Excerpt, 100)))
	}
}

func cardChangedDetails(s *contracts.State, c *contracts.CardChange, wfID string) string {
	var b strings.Builder
	b.WriteString("## The agent card changed\n\n")
	fmt.Fprintf(&b, "%s\n\nOld digest `%s`, new digest `%s`.\n\n", contracts.InertMarkdown(c.What), c.OldDigest, c.NewDigest)
	fmt.Fprintf(&b, "The follow-up is held. To accept the new card, send Signal `%s` (no payload), or run `delegate rediscover %s`. ", contracts.SignalRediscover, wfID)
	fmt.Fprintf(&b, "Otherwise the delegation ends `card_changed` at its deadline; cancel it with `delegate cancel %s`.\n", wfID)
	return b.String()
}

func unknownDetails(s *contracts.State, wfID string) string {
	u := s.Unknown
	var b strings.Builder
	fmt.Fprintf(&b, "## Unknown outcome (round %d)\n\n", u.Round)
	fmt.Fprintf(&b, "The message `%s` was written to the agent, but no answer came (since %s); it may or may not have been processed.\n\n", u.MessageID, u.Since.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Error: %s\n\n", contracts.InertMarkdown(u.Error))
	fmt.Fprintf(&b, "**Choose** with Signal or Update `%s`:\n\n", contracts.ResolveUnknown)
	b.WriteString("- `{\"action\": \"resend\"}`: send again with the same messageId (an agent that deduplicates sees one message);\n")
	b.WriteString("- `{\"action\": \"adopt\", \"task_id\": \"...\"}`: carry on with a task the agent created (checked with GetTask first);\n")
	b.WriteString("- `{\"action\": \"abandon\"}`: end with status `unknown_outcome`.\n\n")
	fmt.Fprintf(&b, "CLI: `delegate resolve %s --action resend`.\n", wfID)
	return b.String()
}

func finishedDetails(o contracts.Outcome) string {
	s := fmt.Sprintf("**Finished: `%s`** · %d output(s), %d rejected artifact(s), %d input round(s)",
		o.Status, len(o.Outputs), len(o.RejectedArtifacts), o.InputRounds)
	if o.Error != nil {
		s += fmt.Sprintf(" · error category `%s`", o.Error.Category)
	}
	return s
}
