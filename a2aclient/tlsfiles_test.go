package a2aclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/testcerts"
)

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func certDER(t *testing.T, p string) []byte {
	t.Helper()
	blk, _ := pem.Decode(readFile(t, p))
	if blk == nil {
		t.Fatalf("%s: no PEM", p)
	}
	return blk.Bytes
}

// writeRotated puts content at p with a modification time of its own, as a
// certificate rotation (cert-manager, a sidecar) does.
func writeRotated(t *testing.T, p string, content []byte, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// An agent that requires a client certificate (A2A 1.0 §4.5.6) gets the
// store's, through the guard's client; when the files are replaced, the
// next connection presents the new certificate, without a restart. The
// agent's server certificate is verified against the store's ca_file.
func TestMTLSWithRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := testcerts.Make(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := testcerts.Make(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(readFile(t, a.CA))
	clientCAs.AppendCertsFromPEM(readFile(t, b.CA))
	serverCert, err := tls.LoadX509KeyPair(a.ServerCert, a.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var presented [][]byte
	srv := httptest.NewUnstartedServer(nil)
	agent := claimsagent.New(claimsagent.Config{BaseURL: "https://" + srv.Listener.Addr().String()})
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		presented = append(presented, r.TLS.PeerCertificates[0].Raw)
		mu.Unlock()
		agent.ServeHTTP(w, r)
	})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	srv.Config.SetKeepAlivesEnabled(false) // each call a new handshake
	srv.StartTLS()
	defer srv.Close()

	live := t.TempDir()
	t0 := time.Now().Add(-time.Hour)
	writeRotated(t, filepath.Join(live, "client.pem"), readFile(t, a.ClientCert), t0)
	writeRotated(t, filepath.Join(live, "client-key.pem"), readFile(t, a.ClientKey), t0)
	store := filepath.Join(live, "credentials.json")
	doc := fmt.Sprintf(`{"origins": {%q: {"tls": {"cert_file": "client.pem", "key_file": "client-key.pem", "ca_file": %q}}}}`, srv.URL, a.CA)
	if err := os.WriteFile(store, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	creds, err := LoadCredentials(store)
	if err != nil {
		t.Fatal(err)
	}
	origin, _ := cards.Origin(srv.URL)
	conf, ok := creds.TLSFor(origin)
	if !ok {
		t.Fatal("TLSFor(origin) found no TLS config")
	}
	call := func(conf *tls.Config) error {
		hc := (&cards.Fetcher{}).ClientTLS(origin, time.Minute, conf)
		c, err := Dial(ctx, contracts.Interface{URL: srv.URL + claimsagent.JSONRPCPath, Binding: "JSONRPC", Version: "1.0"}, Options{HTTPClient: hc, TLSConfig: conf})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = send(ctx, c)
		return err
	}
	last := func() []byte {
		mu.Lock()
		defer mu.Unlock()
		if len(presented) == 0 {
			return nil
		}
		return presented[len(presented)-1]
	}
	if err := call(conf); err != nil {
		t.Fatalf("call with the first certificate: %v", err)
	}
	if !bytes.Equal(last(), certDER(t, a.ClientCert)) {
		t.Fatal("the agent did not see the store's client certificate")
	}

	// Rotate: the same paths, a new certificate and key.
	t1 := time.Now()
	writeRotated(t, filepath.Join(live, "client.pem"), readFile(t, b.ClientCert), t1)
	writeRotated(t, filepath.Join(live, "client-key.pem"), readFile(t, b.ClientKey), t1)
	if err := call(conf); err != nil {
		t.Fatalf("call after the rotation: %v", err)
	}
	if !bytes.Equal(last(), certDER(t, b.ClientCert)) {
		t.Error("after the rotation the agent still saw the old client certificate")
	}

	// The server certificate is verified against ca_file: another CA's
	// trust refuses it, and nothing reaches the agent.
	other := filepath.Join(t.TempDir(), "credentials.json")
	doc = fmt.Sprintf(`{"origins": {%q: {"tls": {"cert_file": %q, "key_file": %q, "ca_file": %q}}}}`, srv.URL, b.ClientCert, b.ClientKey, b.CA)
	if err := os.WriteFile(other, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong, err := LoadCredentials(other)
	if err != nil {
		t.Fatal(err)
	}
	wconf, _ := wrong.TLSFor(origin)
	mu.Lock()
	n := len(presented)
	mu.Unlock()
	if err := call(wconf); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("call trusting another CA: %v, want a certificate verification error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(presented) != n {
		t.Error("a request reached the agent over an unverified connection")
	}
}
