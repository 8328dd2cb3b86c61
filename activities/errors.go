package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/contracts"
)

// refError is a credential_ref that could not be used (nothing sent).
type refError struct{ err error }

func (e *refError) Error() string { return e.err.Error() }

func (e *refError) Unwrap() error { return e.err }

// callFail turns a call's error into the ApplicationError of its category;
// its message (remote text included) is cut to the contract's
// max_text_chars (lim), with the length and sha256 of what was cut.
func (a *Activities) callFail(ctx context.Context, op string, err error, lim contracts.Limits) error {
	var re *refError
	if errors.As(err, &re) {
		a.log(ctx).Warn("credential_ref refused", "op", op, "reason", err.Error())
		if errors.Is(err, a2aclient.ErrRefNotAllowed) {
			return temporal.NewNonRetryableApplicationError(err.Error(), contracts.ErrTypeCredentialRefNotAllowed, nil)
		}
		return temporal.NewNonRetryableApplicationError(err.Error(), contracts.ErrTypeCredentialRef, nil)
	}
	cat := contracts.CategoryProtocol
	var ce *a2aclient.CallError
	if errors.As(err, &ce) {
		cat = ce.Category
	}
	return a.failText(ctx, op, cat, contracts.CutText(err.Error(), lim.WithDefaults().MaxTextChars))
}

// fail logs the failure by id and category and returns the
// ApplicationError the workflow will see, its message cut to the default
// max_text_chars. The error is not wrapped as a cause: the message is all
// that enters history.
func (a *Activities) fail(ctx context.Context, op string, cat contracts.Category, err error) error {
	return a.failText(ctx, op, cat, contracts.CutText(err.Error(), contracts.DefaultLimits.MaxTextChars))
}

func (a *Activities) failText(ctx context.Context, op string, cat contracts.Category, msg string) error {
	a.log(ctx).Warn("activity failed", "op", op, "category", string(cat))
	if cat == contracts.CategoryTransient {
		return temporal.NewApplicationError(msg, string(cat))
	}
	return temporal.NewNonRetryableApplicationError(msg, string(cat), nil)
}

// bound applies the contract's limits to a snapshot before it becomes an
// activity result, that is workflow history: oversize, too deep or surplus
// artifacts are withheld (ApplyLimits) and remote text is cut
// (contracts.CutText). Then the whole is bounded by its encoded size,
// MaxResultBytes, whatever the agent sent: an activity result over
// Temporal's payload limit fails the activity, and with it the record of a
// task the agent created (a send would be sent again).
func bound(s contracts.TaskSnapshot, l contracts.Limits) contracts.TaskSnapshot {
	lim := l.WithDefaults()
	s.Artifacts = ApplyLimits(s.Artifacts, lim)
	s.StatusText = contracts.CutText(s.StatusText, lim.MaxTextChars)
	s.Reply = contracts.CutText(s.Reply, lim.MaxTextChars)
	s.RawState = contracts.CutText(s.RawState, 256)
	s.StatusMessageID = contracts.CutText(s.StatusMessageID, 256)
	s.StatusTimestamp = contracts.CutText(s.StatusTimestamp, 64)
	s.StatusKey = contracts.CutText(s.StatusKey, 512)
	if len(s.StatusData) > lim.MaxArtifactBytes {
		s.StatusData = nil
		s.StatusText += " [status data withheld: over the size limit]"
	}
	size := encodedSize(s)
	if size <= MaxResultBytes {
		return s
	}
	// Everything counts toward the encoded size (metadata, ids, names,
	// media types, part counts): the largest artifacts are withheld,
	// largest first, until the result fits.
	type sized struct{ i, n int }
	var order []sized
	for i, a := range s.Artifacts {
		if a.Withheld == "" {
			order = append(order, sized{i, encodedSize(a)})
		}
	}
	slices.SortStableFunc(order, func(a, b sized) int { return b.n - a.n })
	for _, o := range order {
		if size <= MaxResultBytes {
			return s
		}
		w := Withhold(s.Artifacts[o.i], fmt.Sprintf("%s: the artifact is %d bytes encoded (metadata and parts included); the task's result must fit in %d", contracts.ReasonTooLarge, o.n, MaxResultBytes), o.n)
		s.Artifacts[o.i] = w
		size -= o.n - encodedSize(w)
	}
	if size <= MaxResultBytes {
		return s
	}
	// Still over (the withheld entries themselves, or the status): the
	// status data goes, the status text is cut short, and the artifacts
	// past the first few become one entry.
	s.StatusData = nil
	s.StatusText = contracts.CutText(s.StatusText, 1024)
	s.Reply = contracts.CutText(s.Reply, 1024)
	if len(s.Artifacts) > maxListedWhenOver {
		rest := s.Artifacts[maxListedWhenOver:]
		s.Artifacts = append(s.Artifacts[:maxListedWhenOver:maxListedWhenOver],
			WithheldRest(rest, fmt.Sprintf("%s: the task's result must fit in %d bytes", contracts.ReasonTooLarge, MaxResultBytes)))
	}
	return s
}

// maxListedWhenOver is how many artifacts a result over MaxResultBytes
// still lists one by one (each withheld: an id and a name of at most
// MaxWithheldIDChars, a size and a sha256).
const maxListedWhenOver = 64

// MaxResultBytes bounds the encoded size of a snapshot an activity
// returns into history (Temporal refuses payloads over 2 MiB).
const MaxResultBytes = 1 << 20

func encodedSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}
