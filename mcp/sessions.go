package mcp

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// endSessions serves the Streamable HTTP endpoint h and, before a DELETE
// ends a session, withdraws the session's pending elicitation forms and
// cancels its calls in flight: the go-sdk closes a session only once its
// requests, outgoing ones included, have ended, so a form with the human
// held the DELETE, and the call, for up to ElicitTimeout.
func (s *Server) endSessions(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sid := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && sid != "" {
			if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
				if n := s.h.endSession(sid, ti.UserID); n > 0 {
					s.o.Logger.Info("mcp: session closed: its forms withdrawn and calls ended", "actor", ti.UserID, "ended", n)
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}
