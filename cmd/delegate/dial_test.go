package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// frontend is a gRPC server that answers GetSystemInfo with fail's error
// for the first n calls, then as a Temporal frontend does; it counts them.
func frontend(t *testing.T, n int32, fail codes.Code) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		if method != "/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo" {
			return status.Error(codes.Unimplemented, method)
		}
		if calls.Add(1) <= n {
			return status.Error(fail, "Frontend is not healthy yet")
		}
		var req workflowservice.GetSystemInfoRequest
		if err := stream.RecvMsg(&req); err != nil {
			return err
		}
		return stream.SendMsg(&workflowservice.GetSystemInfoResponse{ServerVersion: "test"})
	}))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), &calls
}

// A worker that starts while its frontend is not healthy yet waits for it
// (it exited at once: a worker started beside its server, or before a
// restarted frontend came back, was gone); an error that waiting does not
// cure (PermissionDenied) ends the start at once.
func TestWorkerWaitsForItsFrontend(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, calls := frontend(t, 2, codes.Unavailable)
	c, err := dialWaiting(ctx, client.Options{HostPort: addr, ConnectionOptions: client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}}, quiet, 30*time.Second)
	if err != nil {
		t.Fatalf("dialWaiting: %v after %d calls, want connected after the frontend became healthy", err, calls.Load())
	}
	c.Close()
	if n := calls.Load(); n < 3 {
		t.Errorf("%d GetSystemInfo calls, want 3 (two refused, then the answer)", n)
	}

	addr, calls = frontend(t, 100, codes.PermissionDenied)
	var denied *serviceerror.PermissionDenied
	if _, err := dialWaiting(ctx, client.Options{HostPort: addr}, quiet, 30*time.Second); !errors.As(err, &denied) || calls.Load() != 1 {
		t.Errorf("dialWaiting: %v after %d calls, want PermissionDenied after 1", err, calls.Load())
	}
}
