package client

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	sdkclient "go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// An empty Connection reads TEMPORAL_ADDRESS (the README's snippet relies
// on it); a set Address wins over it.
func TestConnectionEnvAndFields(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir) // no profile file of the user's
	t.Setenv("HOME", dir)
	t.Setenv("TEMPORAL_CONFIG_FILE", "")
	t.Setenv("TEMPORAL_PROFILE", "")
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:7645")
	t.Setenv("TEMPORAL_NAMESPACE", "")
	for _, tc := range []struct {
		conn Connection
		want string
	}{
		{Connection{}, "127.0.0.1:7645"},
		{Connection{Address: "127.0.0.1:7233"}, "127.0.0.1:7233"},
	} {
		o, err := tc.conn.Options()
		if err != nil {
			t.Fatal(err)
		}
		if o.HostPort != tc.want || o.Namespace != DefaultNamespace {
			t.Errorf("%+v: %s (namespace %s), want %s (namespace %s)", tc.conn, o.HostPort, o.Namespace, tc.want, DefaultNamespace)
		}
	}
}

// A client of a server on this host sends its requests uncompressed (the
// SDK's default is gzip, CPU and nothing else over loopback); a client of
// another host keeps the SDK's default.
func TestLoopbackConnectionIsNotCompressed(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	t.Setenv("TEMPORAL_CONFIG_FILE", "")
	t.Setenv("TEMPORAL_PROFILE", "")
	t.Setenv("TEMPORAL_ADDRESS", "")
	// A gRPC server that records the encoding of what reaches it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	encodings := make(chan string, 16)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(stream.Context())
		encodings <- strings.Join(md.Get("grpc-encoding"), ",")
		return status.Error(codes.Unavailable, "recorded")
	}))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	o, err := Connection{Address: ln.Addr().String()}.Options()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := sdkclient.DialContext(ctx, o); err == nil {
		c.Close()
	}
	select {
	case enc := <-encodings:
		if enc != "" {
			t.Errorf("a request to %s went with grpc-encoding %q, want none", ln.Addr(), enc)
		}
	case <-ctx.Done():
		t.Fatal("no request reached the server")
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:7233": true, "127.8.9.1:7233": true, "localhost:7233": true, "LocalHost:7233": true, "[::1]:7233": true,
		"temporal.example.com:7233": false, "10.0.0.7:7233": false, "[2001:db8::1]:7233": false, "ns.a1b2c.tmprl.cloud:7233": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
	o, err = Connection{Address: "temporal.example.com:7233"}.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.ConnectionOptions.GrpcCompression != nil {
		t.Errorf("a remote server's connection: compression %T, want the SDK's default", o.ConnectionOptions.GrpcCompression)
	}
}
