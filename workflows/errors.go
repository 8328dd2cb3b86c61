package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// stop is why a delegation ends before its remote task does, with the
// Outcome it ends with: it travels as an error from where the stop is found
// (the listener's revoke, the deadline timer, a policy, a card, an
// operator) to failed, which turns it into that Outcome. Each stop ends the
// delegation once; none is retried.
type stop struct {
	kind   stopKind
	status contracts.Status
	// info is the Outcome's error; a deadline's message is written when
	// the Outcome is (deadlineMessage: where the deadline found it).
	info contracts.ErrorInfo
	// what is the stop said shortly, as an error (recorded where it
	// stopped an answer or a send).
	what string
}

// stopKind is what stopped a delegation.
type stopKind int

const (
	// stopDeadline: the contract's deadline passed.
	stopDeadline stopKind = iota + 1
	// stopRevoked: an operator revoked the delegation (Signal "revoke").
	stopRevoked
	// stopDenied: the policy denied an outbound message
	// (docs/architecture.md, principle 1).
	stopDenied
	// stopCardChanged: the card changed in a way that matters and no
	// operator accepted it (Signal "rediscover") before the deadline.
	stopCardChanged
	// stopUntrusted: the card an operator accepted fails the signature the
	// contract requires.
	stopUntrusted
	// stopAbandoned: an operator abandoned a send whose outcome is unknown.
	stopAbandoned
	// stopRefused: a first send refused because of the card: nothing was
	// sent, and nothing is canceled.
	stopRefused
)

func (s *stop) Error() string { return s.what }

// deadline is the stop of a deadline that passed.
func deadline() *stop {
	return &stop{kind: stopDeadline, status: contracts.StatusDeadlineExceeded, info: contracts.ErrorInfo{Category: contracts.CategoryDeadline, Message: "deadline reached"}, what: "deadline reached"}
}

// revoked is the stop of a revoke with its reason.
func revoked(reason string) *stop {
	return &stop{kind: stopRevoked, status: contracts.StatusAuthorizationDenied, info: contracts.ErrorInfo{Category: contracts.CategoryAuthorization,
		Message: "nothing sent after this: revoked: " + reason}, what: "authorization revoked: " + reason}
}

// denied is the stop of a policy that denies a send.
func denied(reason string) *stop {
	return &stop{kind: stopDenied, status: contracts.StatusAuthorizationDenied, info: contracts.ErrorInfo{Category: contracts.CategoryAuthorization,
		Message: "nothing sent after this: the policy denies it: " + reason}, what: "authorization denied: " + reason}
}

// cardChanged is the stop of a card change no operator accepted in time.
func cardChanged(c contracts.CardChange) *stop {
	return &stop{kind: stopCardChanged, status: contracts.StatusCardChanged, info: contracts.ErrorInfo{Category: contracts.CategoryCard,
		Message: fmt.Sprintf("the agent card changed (%s); old digest %s, new digest %s; no operator sent %q before the deadline", c.What, c.OldDigest, c.NewDigest, contracts.SignalRediscover)}, what: "card changed: " + c.What}
}

// untrusted is the stop of an accepted card that fails the required
// signature.
func untrusted(v contracts.CardVerification) *stop {
	return &stop{kind: stopUntrusted, status: contracts.StatusCardUntrusted, info: contracts.ErrorInfo{Category: contracts.CategoryCard,
		Message: "nothing sent after the card changed: a verified card signature is required; the new card is " + v.Status + reasonSuffix(v.Reason)}, what: "card untrusted: " + v.Status}
}

// abandoned is the stop of an operator who abandoned the unknown outcome u.
func abandoned(u contracts.UnknownOutcome) *stop {
	return &stop{kind: stopAbandoned, status: contracts.StatusUnknownOutcome, info: contracts.ErrorInfo{Category: contracts.CategoryUnknownOutcome,
		Message: fmt.Sprintf("abandoned by an operator after the unknown outcome of round %d (messageId %s): %s", u.Round, u.MessageID, u.Error)}, what: "abandoned after an unknown outcome"}
}

// refused is the stop of a first send refused because of the card.
func refused(status contracts.Status, message string) *stop {
	return &stop{kind: stopRefused, status: status, info: contracts.ErrorInfo{Category: contracts.CategoryCard, Message: message}, what: message}
}

// asStop returns the stop err is, or nil.
func asStop(err error) *stop {
	var s *stop
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// isDeadline reports whether err is the deadline's stop.
func isDeadline(err error) bool {
	s := asStop(err)
	return s != nil && s.kind == stopDeadline
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
