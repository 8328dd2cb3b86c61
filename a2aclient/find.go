package a2aclient

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc/codes"

	"github.com/a2adelegate/delegate/contracts"
)

// FindPages bounds the ListTasks pages FindTaskByMessage reads (of
// findPageSize tasks each).
const FindPages = 3

const findPageSize = 100

// findHistory is the history each listed task comes with: enough to hold
// the first message of a task that has asked and been answered a few
// times.
const findHistory = 20

// ErrListNotOffered is wrapped by FindTaskByMessage's error when the agent
// does not serve ListTasks (A2A 0.3 has no such method; a 1.0 server may
// answer UnsupportedOperation): nothing could be looked for.
var ErrListNotOffered = errors.New("the agent does not serve ListTasks")

// FindTaskByMessage looks for the task that a message (its messageId) sent
// since since created: A2A 1.0 ListTasks (§3.1.4, JSON-RPC §9.4.4) with
// statusTimestampAfter since, each task with its history (the last 20
// messages) and artifacts, at most FindPages pages of 100 tasks. found
// reports a task whose history holds the message; its snapshot is
// returned. A send whose outcome is unknown is looked for this way before
// it is sent again, so that a resend never silently makes a second task.
// Errors are *CallError; one wrapping ErrListNotOffered means the agent
// serves no ListTasks.
func (c *Client) FindTaskByMessage(ctx context.Context, messageID string, since time.Time) (snap contracts.TaskSnapshot, found bool, err error) {
	snap, found, err = c.findTaskByMessage(ctx, messageID, since)
	return c.red.snapshot(snap), found, c.finish(err)
}

func (c *Client) findTaskByMessage(ctx context.Context, messageID string, since time.Time) (contracts.TaskSnapshot, bool, error) {
	if c.iface.Version != "1.0" {
		return contracts.TaskSnapshot{}, false, &CallError{Category: contracts.CategoryProtocol, Op: "ListTasks", Err: ErrListNotOffered}
	}
	hist := findHistory
	after := since.UTC()
	token := ""
	for page := 0; page < FindPages; page++ {
		cctx, cancel := context.WithTimeout(ctx, c.callTimeout)
		cctx, rec := withRecord(cctx)
		rec.exact.keepHistory = true
		res, err := c.sdk.ListTasks(cctx, &a2a.ListTasksRequest{PageSize: findPageSize, PageToken: token, HistoryLength: &hist,
			StatusTimestampAfter: &after, IncludeArtifacts: true})
		if err != nil {
			cancel()
			ce := classify("ListTasks", err, rec).(*CallError)
			if notOffered(ce) {
				ce.Err = errors.Join(ErrListNotOffered, ce.Err)
			}
			return contracts.TaskSnapshot{}, false, ce
		}
		cancel()
		for _, t := range res.Tasks {
			if t == nil {
				continue
			}
			for _, m := range t.History {
				if m != nil && m.ID == messageID && m.Role != a2a.MessageRoleAgent {
					if err := checkIDs("ListTasks", "", "", string(t.ID), t.ContextID, true); err != nil {
						return contracts.TaskSnapshot{}, false, err
					}
					t.History = nil
					return snapshotOf(t, rec.exact, c.iface.Version), true, nil
				}
			}
		}
		if res.NextPageToken == "" {
			break
		}
		token = res.NextPageToken
	}
	return contracts.TaskSnapshot{}, false, nil
}

// notOffered reports an error by which the agent says it has no ListTasks:
// A2A UnsupportedOperation (-32004), JSON-RPC method not found (-32601),
// HTTP 404, 405 or 501, gRPC Unimplemented.
func notOffered(ce *CallError) bool {
	switch {
	case ce.HasCode && (ce.Code == -32004 || ce.Code == -32601):
		return true
	case ce.Status == http.StatusNotFound || ce.Status == http.StatusMethodNotAllowed || ce.Status == http.StatusNotImplemented:
		return true
	case ce.HasGRPCCode && (codes.Code(ce.GRPCCode) == codes.Unimplemented):
		return true
	}
	return errors.Is(ce.Err, a2a.ErrUnsupportedOperation) || errors.Is(ce.Err, a2a.ErrMethodNotFound)
}
