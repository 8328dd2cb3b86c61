package activities

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Observer is told of every call to an agent, every token request and
// every card resolution's signature check, for metrics (package
// internal/metrics implements it). CardVerification's result is
// "verified", "unverified" (no signature), "untrusted" (signed, no
// trusted key verified it) or "changed" (a follow-up found the card
// changed in a way that matters). It must not block.
type Observer interface {
	a2aclient.Observer
	CardVerification(result string)
}

// logAttrs is what the log lines of one activity call carry about its
// delegation beyond its ids: the remote task id, the agent's origin as the
// metrics label it (cards.LabelOrigin of the interface URL, or of the card URL
// before the interface is known), and the card's origin when it differs
// (a gRPC interface, one on another origin, or a default port the card
// left out).
type logAttrs struct{ taskID, origin, cardOrigin string }

type logKey struct{}

// withDelegation notes in ctx the remote task id and the agent origin
// (of iface, or of a card URL) that a.log adds to every line of the call;
// an empty value keeps the one noted before. agent_origin is written as
// delegate's metrics write their agent_origin label, so that an alert's
// label finds the delegation's lines.
func withDelegation(ctx context.Context, taskID string, iface contracts.Interface, cardURL string) context.Context {
	la, _ := ctx.Value(logKey{}).(logAttrs)
	if taskID != "" {
		la.taskID = taskID
	}
	switch {
	case iface.URL != "":
		if o := cards.LabelOrigin(iface.URL); o != "" {
			la.origin = o
		}
	case cardURL != "":
		if o := cards.LabelOrigin(cardURL); o != "" {
			la.origin = o
		}
	}
	la.cardOrigin = ""
	if co := iface.CardOrigin; co != "" && cards.LabelOrigin(co) != la.origin {
		la.cardOrigin = co
	}
	return context.WithValue(ctx, logKey{}, la)
}

// log is the activities' logger with what identifies the delegation the
// call is about (docs/operations.md, "Watching delegate"):
// local_workflow_id and run_id, remote_task_id and agent_origin once
// known (withDelegation), the activity's type, and trace_id when tracing
// is on. Never a message body, a question or a secret.
func (a *Activities) log(ctx context.Context) *slog.Logger {
	l := a.logger()
	var args []any
	if info, ok := activityInfo(ctx); ok {
		args = append(args, "local_workflow_id", info.WorkflowExecution.ID, "run_id", info.WorkflowExecution.RunID, "activity", info.ActivityType.Name)
	}
	if la, ok := ctx.Value(logKey{}).(logAttrs); ok {
		if la.taskID != "" {
			args = append(args, "remote_task_id", la.taskID)
		}
		if la.origin != "" {
			args = append(args, "agent_origin", la.origin)
		}
		if la.cardOrigin != "" {
			args = append(args, "card_origin", la.cardOrigin)
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		args = append(args, "trace_id", sc.TraceID().String())
	}
	if len(args) == 0 {
		return l
	}
	return l.With(args...)
}

// activityInfo is the activity's info, when ctx is an activity's.
func activityInfo(ctx context.Context) (info activity.Info, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if !activity.IsActivity(ctx) {
		return activity.Info{}, false
	}
	return activity.GetInfo(ctx), true
}

// observeCard counts a card resolution's signature check (Observer).
func (a *Activities) observeCard(v contracts.CardVerification) {
	if a.Observer == nil {
		return
	}
	switch v.Status {
	case contracts.SigVerified:
		a.Observer.CardVerification("verified")
	case contracts.SigUnsigned:
		a.Observer.CardVerification("unverified")
	default:
		a.Observer.CardVerification("untrusted")
	}
}
