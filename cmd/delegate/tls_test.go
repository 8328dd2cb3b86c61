package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/devserver"
	"github.com/a2adelegate/delegate/internal/testcerts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// Every command that dials Temporal reaches a frontend that takes mutual
// TLS only, through the Temporal CLI's flags, the TEMPORAL_* environment,
// or a profile of the config file; without them it is refused.
func TestDialingCommandsTakeTLS(t *testing.T) {
	certs, err := testcerts.Make(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Config{Memory: true, UIPort: -1, LogLevel: "fatal",
		SearchAttributes: contracts.SearchAttributeNames, TLS: &devserver.TLS{
			CertFile: certs.ServerCert, KeyFile: certs.ServerKey, CAFile: certs.CA, RequireClientAuth: true,
			ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey,
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	// Keep a user's own Temporal config out of the test.
	t.Setenv("TEMPORAL_CONFIG_FILE", writeFile(t, "empty.toml", ""))
	t.Setenv("TEMPORAL_ADDRESS", srv.FrontendAddr())

	flags := []string{"--tls-cert-path", certs.ClientCert, "--tls-key-path", certs.ClientKey, "--tls-ca-path", certs.CA, "--tls-server-name", "localhost"}
	contract := writeFile(t, "c.json", fmt.Sprintf(`{"local_workflow_id": "tls-1", "agent_card_url": "http://127.0.0.1:9/.well-known/agent-card.json",
 "skill": "open-claim", "purpose": "p", "message": {"text": "hi"}, "allowed_outputs": ["claim_opened"],
 "deadline": %q, "write_authority": "none"}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	commands := [][]string{
		{"start", "--contract", contract},
		{"status", "tls-1"},
		{"list"},
		{"answer", "tls-1", "--text", "x"},
		{"resolve", "tls-1", "--action", "abandon"},
		{"rediscover", "tls-1"},
		{"reconcile", "--wait", "1s"},
		{"cancel", "tls-1", "--wait", "0"},
		{"revoke", "tls-1", "--reason", "x", "--wait", "0"},
	}
	// The worker, connected with the flags, serves the commands below
	// and runs until stopped (exit 0).
	wctx, wcancel := context.WithCancel(ctx)
	var wout testutil.LockedBuffer
	wdone := make(chan int, 1)
	go func() { wdone <- run(wctx, append([]string{"worker"}, flags...), &wout, &wout) }()
	defer func() {
		wcancel()
		if code := <-wdone; code != exitOK {
			t.Errorf("worker with the TLS flags: exit %d: %s", code, wout.String())
		}
	}()

	refused := "connecting to Temporal at " + srv.FrontendAddr()
	for i, c := range commands {
		t.Run(c[0], func(t *testing.T) {
			if i < 2 { // a refused dial takes seconds; all share one dial path
				if _, stderr, code := cli(t, c...); code != exitTemporal || !strings.Contains(stderr, refused) {
					t.Errorf("without TLS: exit %d, stderr %q; want exit 3, refused", code, stderr)
				}
			}
			_, stderr, code := cli(t, append(append([]string{}, c...), flags...)...)
			// These reach the workflow, which refuses them (no question, no
			// unknown outcome, no card change, already canceled): exit 3
			// with its reason.
			refusedByWorkflow := c[0] == "answer" || c[0] == "resolve" || c[0] == "rediscover" || c[0] == "revoke"
			if strings.Contains(stderr, "connecting to Temporal") || (code != 0 && !refusedByWorkflow) {
				t.Errorf("with the TLS flags: exit %d: %s", code, stderr)
			}
		})
	}

	// The environment alone.
	t.Run("env", func(t *testing.T) {
		t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", certs.ClientCert)
		t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", certs.ClientKey)
		t.Setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", certs.CA)
		t.Setenv("TEMPORAL_TLS_SERVER_NAME", "localhost")
		if _, stderr, code := cli(t, "list"); code != 0 {
			t.Errorf("list with TEMPORAL_TLS_*: exit %d: %s", code, stderr)
		}
	})
	// A profile of the config file.
	t.Run("profile", func(t *testing.T) {
		toml := fmt.Sprintf("[profile.prod]\naddress = %q\nnamespace = \"default\"\n[profile.prod.tls]\nclient_cert_path = %q\nclient_key_path = %q\nserver_ca_cert_path = %q\nserver_name = \"localhost\"\n",
			srv.FrontendAddr(), certs.ClientCert, certs.ClientKey, certs.CA)
		file := writeFile(t, "temporal.toml", toml)
		t.Setenv("TEMPORAL_ADDRESS", "")
		os.Unsetenv("TEMPORAL_ADDRESS") // restored by t.Setenv's cleanup
		if _, stderr, code := cli(t, "list", "--config-file", file, "--profile", "prod"); code != 0 {
			t.Errorf("list --profile prod: exit %d: %s", code, stderr)
		}
		if _, stderr, code := cli(t, "list", "--config-file", file, "--profile", "nope"); code != exitUsage || !strings.Contains(stderr, "nope") {
			t.Errorf("list --profile nope: exit %d: %s; want 2 naming the profile", code, stderr)
		}
	})
	// A certificate without its key is bad input, named.
	if _, stderr, code := cli(t, "list", "--tls-cert-path", certs.ClientCert); code != exitUsage || !strings.Contains(stderr, "--tls-key-path") {
		t.Errorf("cert without key: exit %d: %s", code, stderr)
	}
}

// An API key never shows in what the CLI prints, even when the dial fails.
func TestAPIKeyNeverPrinted(t *testing.T) {
	t.Setenv("TEMPORAL_CONFIG_FILE", writeFile(t, "empty.toml", ""))
	const secret = "sk-test-0123456789abcdef"
	for _, args := range [][]string{
		{"list", "--address", "127.0.0.1:1", "--api-key", secret},
		{"status", "x", "--address", "127.0.0.1:1", "--api-key", secret, "--tls-cert-path", "/nonexistent"},
	} {
		out, stderr, code := cli(t, args...)
		if code == 0 || strings.Contains(out+stderr, secret) {
			t.Errorf("delegate %s: exit %d, output %q", args[0], code, out+stderr)
		}
	}
	t.Setenv("TEMPORAL_API_KEY", secret)
	if out, stderr, _ := cli(t, "list", "--address", "127.0.0.1:1"); strings.Contains(out+stderr, secret) {
		t.Errorf("TEMPORAL_API_KEY printed: %q", out+stderr)
	}

}

// Connection settings that would weaken TLS or silently connect elsewhere
// are refused before anything is dialed (exit 2), naming the setting.
func TestConnectionRefusesUnsafeOrMistyped(t *testing.T) {
	empty := writeFile(t, "empty.toml", "")
	t.Setenv("TEMPORAL_CONFIG_FILE", empty)
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"host verification off", map[string]string{"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION": "true"}, []string{"--tls"}, "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"},
		{"API key without TLS", map[string]string{"TEMPORAL_API_KEY": "k-123"}, []string{"--tls=false"}, "the key would travel in clear"},
		{"certificates without TLS", nil, []string{"--tls=false", "--tls-ca-path", empty}, "TLS is off"},
		{"config file missing", nil, []string{"--config-file", "/nonexistent/temporal.toml"}, "config file"},
		{"TEMPORAL_TLS not a boolean", map[string]string{"TEMPORAL_TLS": "yes please"}, nil, "TEMPORAL_TLS"},
		{"misspelt key", nil, []string{"--config-file", writeFile(t, "typo.toml", "[profile.default]\naddres = \"127.0.0.1:1\"\n")}, "addres"},
		{"parse error hides the file's text", nil, []string{"--config-file", writeFile(t, "bad.toml", "[profile.default]\napi_key = SECRETKEY-abc\n")}, "failed parsing config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, stderr, code := cli(t, append([]string{"list", "--address", "127.0.0.1:1"}, c.args...)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "SECRETKEY") || strings.Contains(stderr, "k-123") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %q, no secret", code, stderr, c.want)
			}
		})
	}
	// A variable set but empty counts as unset: the profile's address stands.
	prof := writeFile(t, "p.toml", "[profile.default]\naddress = \"127.0.0.1:2\"\n")
	t.Setenv("TEMPORAL_CONFIG_FILE", prof)
	t.Setenv("TEMPORAL_ADDRESS", "")
	if _, stderr, _ := cli(t, "list"); !strings.Contains(stderr, "127.0.0.1:2") {
		t.Errorf("empty TEMPORAL_ADDRESS overrode the profile: %s", stderr)
	}
}
