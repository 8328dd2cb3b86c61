package mcp

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// byProtocol serves the Streamable HTTP endpoint for both eras of MCP:
//
//   - a request of MCP 2026-07-28 or later (its MCP-Protocol-Version
//     header; server/discover included) goes to a stateless handler: it
//     stands alone, carrying its version and capabilities, and no session
//     is kept (the go-sdk's stateful handler refuses it with -32022);
//   - every other goes to stateful, the sessions of MCP up to 2025-11-25
//     (initialize, Mcp-Session-Id). Before a DELETE ends one, the
//     session's pending elicitation forms are withdrawn and its calls in
//     flight cancelled: the go-sdk closes a session only once its
//     requests, outgoing ones included, have ended, so a form with the
//     human held the DELETE, and the call, for up to ElicitTimeout.
func (s *Server) byProtocol(srv *sdk.Server, stateful http.Handler, maxBody int64) http.Handler {
	stateless := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless: true, Logger: s.sdkLogger(), MaxRequestBodyBytes: maxBody,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= ModernProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		if sid := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && sid != "" {
			if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
				if n := s.h.endSession(sid, ti.UserID); n > 0 {
					s.o.Logger.Info("mcp: session closed: its forms withdrawn and calls ended", "actor", ti.UserID, "ended", n)
				}
			}
		}
		stateful.ServeHTTP(w, r)
	})
}
