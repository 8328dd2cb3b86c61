package claimsagent

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"time"

	a2agrpcv0 "github.com/a2aproject/a2a-go/v2/a2agrpc/v0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GRPCServer returns a gRPC server with the agent's A2AService (A2A 1.0
// §10: a2a-go's a2agrpc/v1 handler over the agent's own request handler,
// the same tasks as its HTTP interfaces), and A2A 0.3's (a2agrpc/v0). With Config.RequireBearer, a
// call without "authorization: Bearer <RequireBearer>" metadata (A2A 1.0
// §10.2) fails with Unauthenticated. opts are added (for tests: more
// interceptors).
func (a *Agent) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	if a.cfg.RequireBearer != "" {
		want := "Bearer " + a.cfg.RequireBearer
		check := func(ctx context.Context) error {
			md, _ := metadata.FromIncomingContext(ctx)
			got := ""
			if v := md.Get("authorization"); len(v) == 1 {
				got = v[0]
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				a.Unauthorized.Add(1)
				return status.Error(codes.Unauthenticated, "unauthorized")
			}
			return nil
		}
		opts = append([]grpc.ServerOption{
			grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := check(ctx); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := check(ss.Context()); err != nil {
					return err
				}
				return h(srv, ss)
			}),
		}, opts...)
	}
	s := grpc.NewServer(opts...)
	a2agrpc.NewHandler(a.handler).RegisterWith(s)
	// A2A 0.3's service (a2a.v1.A2AService) beside 1.0's
	// (lf.a2a.v1.A2AService): one port serves both.
	a2agrpcv0.NewHandler(a.handler).RegisterWith(s)
	return s
}

// ServeGRPC serves the agent's gRPC interface on ln until ctx is done,
// then stops gracefully (calls in flight get up to 5 s).
func (a *Agent) ServeGRPC(ctx context.Context, ln net.Listener, opts ...grpc.ServerOption) error {
	s := a.GRPCServer(opts...)
	go func() {
		<-ctx.Done()
		done := make(chan struct{})
		go func() { s.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			s.Stop()
		}
	}()
	if err := s.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}
