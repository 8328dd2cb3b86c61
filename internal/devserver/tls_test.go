package devserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/internal/testcerts"
)

// StartTLS starts a memory server whose frontend takes mutual TLS only.
func StartTLS(t *testing.T) (*Server, testcerts.Files) {
	t.Helper()
	certs, err := testcerts.Make(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := Start(ctx, Config{Memory: true, UIPort: -1, LogLevel: "fatal", TLS: &TLS{
		CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, RequireClientAuth: true,
		ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey,
	}})
	if err != nil {
		t.Fatalf("Start(TLS) error = %v", err)
	}
	t.Cleanup(srv.Stop)
	return srv, certs
}

// The frontend takes mutual TLS only: a plain connection and a TLS one
// without a client certificate are refused, one with it is served.
func TestFrontendMutualTLS(t *testing.T) {
	srv, _ := StartTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(o client.Options) error {
		c, err := client.DialContext(ctx, o)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: srv.Namespace()})
		return err
	}
	good, err := srv.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if err := call(good); err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	plain := client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: quietLogger{}}
	if err := call(plain); err == nil {
		t.Error("a plain connection was served")
	}
	noCert := good
	tc := good.ConnectionOptions.TLS.Clone()
	tc.Certificates = nil
	noCert.ConnectionOptions.TLS = tc
	if err := call(noCert); err == nil {
		t.Error("TLS without a client certificate was served")
	}
}

// Two servers never share a SQLite file: the second is refused before it
// touches it, and the file is free again once the first stops.
func TestDatabaseFileLocked(t *testing.T) {
	db := t.TempDir() + "/temporal.db"
	ctx := context.Background()
	first, err := Start(ctx, Config{DBPath: db, UIPort: -1, LogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(ctx, Config{DBPath: db, UIPort: -1, LogLevel: "fatal"}); err == nil || !strings.Contains(err.Error(), "in use by another server") {
		t.Fatalf("second Start() error = %v, want the file in use", err)
	}
	first.Stop()
	again, err := Start(ctx, Config{DBPath: db, UIPort: -1, LogLevel: "fatal"})
	if err != nil {
		t.Fatalf("Start() after Stop: %v", err)
	}
	again.Stop()
}
