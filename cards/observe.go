package cards

import (
	"errors"
	"time"
)

// Observer is told of the calls made to agents, for metrics (package
// internal/metrics implements it; package a2aclient's calls report to the
// same method). origin is the agent's origin (or, for a gRPC interface,
// its host:port), binding the protocol binding ("HTTP" for a card
// fetch), method the A2A method or MethodGetAgentCard, result one of
// "ok", "transient", "protocol", "authorization", "unknown_outcome", d
// how long the call took. It must not block.
type Observer interface {
	AgentRequest(origin, binding, method, result string, d time.Duration)
}

// MethodGetAgentCard is the method a card fetch is reported as.
const MethodGetAgentCard = "GetAgentCard"

// requestResult is the result a card fetch is reported with: "ok",
// "transient" (Error.Transient), else "protocol" (refused by the guard,
// a status that is not worth retrying, too large).
func requestResult(err error) string {
	if err == nil {
		return "ok"
	}
	var ce *Error
	if errors.As(err, &ce) && ce.Transient() {
		return "transient"
	}
	return "protocol"
}
