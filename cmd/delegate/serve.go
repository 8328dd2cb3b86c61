package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// publicServer is the http.Server of a handler that callers this process
// does not control reach (agents pushing to the webhook, browsers calling
// a codec server): every phase of a request is bounded, so slow clients
// cannot hold connections.
func publicServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
}

// serveUntil serves h on ln (publicServer) until ctx is done.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := publicServer(h)
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
