package workflows

import (
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// Why a delegation stops before its remote task ends. Each becomes one
// Outcome (failed); none is retried.
var (
	// errDeadline: the contract's deadline passed.
	errDeadline = errors.New("deadline reached")
	// errAbandoned: an operator abandoned a send whose outcome is unknown.
	errAbandoned = errors.New("abandoned after an unknown outcome")
	// errHistoryFull: the run's history is full while it waits; it
	// continues as new. Not an ending.
	errHistoryFull = errors.New("history full: continue as new")
)

// deniedError: nothing more may be sent, because the policy denied an
// outbound message (docs/architecture.md, principle 1) or an operator revoked the
// delegation (Signal "revoke").
type deniedError struct {
	reason  string
	revoked bool
}

func (e *deniedError) Error() string {
	if e.revoked {
		return "authorization revoked: " + e.reason
	}
	return "authorization denied: " + e.reason
}

// cardChangedError: the agent card changed in a way that matters and no
// operator accepted it (Signal "rediscover") before the deadline.
type cardChangedError struct {
	change contracts.CardChange
}

func (e *cardChangedError) Error() string { return "card changed: " + e.change.What }

// untrustedError: the card an operator accepted fails the signature the
// contract requires.
type untrustedError struct {
	verification contracts.CardVerification
}

func (e *untrustedError) Error() string { return "card untrusted: " + e.verification.Status }

// stopped reports whether err is one of the reasons above other than the
// deadline: the delegation stops, whatever its remote task does.
func stopped(err error) bool {
	var d *deniedError
	var c *cardChangedError
	var u *untrustedError
	return errors.As(err, &d) || errors.As(err, &c) || errors.As(err, &u) || errors.Is(err, errAbandoned)
}

// errorText is the message of an activity error (its ApplicationError
// message when it has one: what the activity said, without the SDK's
// wrapping), else the error's text.
func errorText(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// errorType is the ApplicationError type of err (for an activity's
// failure, its contracts.Category), or "".
func errorType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

// endedError: a follow-up was not taken and the task had ended, as snap
// shows; cause is why the follow-up failed.
type endedError struct {
	snap  contracts.TaskSnapshot
	cause string
	// unknown: the failed attempt may have reached the agent (it timed
	// out), so the agent may have taken what it carried.
	unknown bool
}

func (e *endedError) Error() string {
	return "the remote task had ended (" + string(e.snap.State) + "): " + e.cause
}

// refusedError is a first send refused because of the card: nothing was
// sent, and the delegation ends with status and info.
type refusedError struct {
	status contracts.Status
	info   *contracts.ErrorInfo
}

func (e *refusedError) Error() string { return e.info.Message }
