package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// runDiscovery runs interop/mcp/discovery.mjs (the TypeScript SDK's
// client auth discovery) with params; a run that does not end with
// {"step":"ok"} fails the test with what it printed.
func runDiscovery(t *testing.T, ctx context.Context, dir string, params map[string]any) mcpLines {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "node", "discovery.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_INTEROP="+string(raw))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	lines := parseLines(t, stdout.Bytes())
	if err != nil || lines.index("ok") < 0 {
		t.Fatalf("discovery.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, lines, tail(stderr.String(), 4000))
	}
	t.Logf("discovery.mjs:\n%s", lines)
	return lines
}

// obj is the object at key k of l (nil if there is none).
func (l mcpLine) obj(k string) map[string]any { m, _ := l[k].(map[string]any); return m }

// TestInteropMCPOAuthDiscovery: the official TypeScript SDK's client auth
// discovery (@modelcontextprotocol/sdk 1.32.2, client/auth.js:
// extractWWWAuthenticateParams, discoverOAuthProtectedResourceMetadata,
// discoverOAuthServerInfo) against `delegate mcp --addr` built from the
// tree, in both modes. From a 401 (no token; a bad one, with
// error="invalid_token") it finds the protected resource metadata (RFC
// 9728), whose resource is the server's URL: in the default mode
// (--tokens) with no authorization_servers, so the SDK's fallback (the
// server's origin) serves no authorization server metadata; in OAuth mode
// (--issuer, an issuer the test serves) naming the issuer, whose metadata
// the SDK then finds (OpenID discovery). In OAuth mode a session on the
// SDK with its ClientCredentialsProvider then gets its token through that
// discovery, for the resource (RFC 8707: aud = the server's URL), and
// starts a delegation as the token's sub.
//
// Formerly (issue 38) both metadata URLs were 404 with --tokens and a 401
// carried a bare `WWW-Authenticate: Bearer`: "Resource server does not
// implement OAuth 2.0 Protected Resource Metadata".
func TestInteropMCPOAuthDiscovery(t *testing.T) {
	dir := mcpClientDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin := buildDelegate(t, ctx, tmp)
	requireMCPCommand(t, bin)

	e := setup(t)
	templates := mcpTemplatesFile(t, tmp, e.base)
	config := testutil.EmptyFile(t)
	conn := []string{"--address", e.srv.FrontendAddr(), "--namespace", e.srv.Namespace()}

	// checkChallenges: both 401s name the metadata the SDK then read.
	checkChallenges := func(t *testing.T, ls mcpLines, metadataURL string) {
		t.Helper()
		for _, l := range ls {
			if l.str("step") != "challenge" {
				continue
			}
			if l.str("resource_metadata") != metadataURL {
				t.Errorf("401 (%s): resource_metadata %q, want %s", l.str("token"), l.str("resource_metadata"), metadataURL)
			}
			if wantErr := map[string]string{"no-token": "", "bad-token": "invalid_token"}[l.str("token")]; l.str("error") != wantErr {
				t.Errorf("401 (%s): error %q, want %q", l.str("token"), l.str("error"), wantErr)
			}
		}
	}
	metadataURL := func(mcpURL string) string {
		return strings.TrimSuffix(mcpURL, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
	}

	t.Run("tokens", func(t *testing.T) {
		url := startMCPHTTP(t, bin, templates, randomToken(t), conn, config)
		ls := runDiscovery(t, ctx, dir, map[string]any{"url": url})
		checkChallenges(t, ls, metadataURL(url))
		md := ls.step(t, "resource-metadata").obj("metadata")
		if md["resource"] != url || md["authorization_servers"] != nil {
			t.Errorf("resource metadata = %v, want resource %s and no authorization_servers", md, url)
		}
		if as := ls.step(t, "authorization-server"); as.obj("metadata") != nil {
			t.Errorf("the SDK found authorization server metadata %v at %s: there is no authorization server", as.obj("metadata"), as.str("authorization_server"))
		}
	})

	t.Run("oauth", func(t *testing.T) {
		iss := issuer(t, "delegate-mcp")
		url := startMCPHTTPWith(t, bin, append([]string{"--issuer", iss.URL, "--audience", "delegate-mcp", "--templates", templates}, conn...), config)
		order := "A-5151"
		ls := runDiscovery(t, ctx, dir, map[string]any{
			"url": url, "issuer": iss.URL, "client_id": "carol", "client_secret": "carol-secret",
			"call": map[string]any{"tool": "claims_scenario", "arguments": map[string]any{"order_id": order, "scenario": "instant", "wait_seconds": 20}},
		})
		checkChallenges(t, ls, metadataURL(url))
		md := ls.step(t, "resource-metadata").obj("metadata")
		if servers, _ := md["authorization_servers"].([]any); md["resource"] != url || len(servers) != 1 || servers[0] != iss.URL {
			t.Errorf("resource metadata = %v, want resource %s and authorization_servers [%s]", md, url, iss.URL)
		}
		as := ls.step(t, "authorization-server")
		if asm := as.obj("metadata"); as.str("authorization_server") != iss.URL || asm["issuer"] != iss.URL || asm["token_endpoint"] != iss.URL+"/token" {
			t.Errorf("authorization server %s, metadata %v; want the issuer %s and its metadata", as.str("authorization_server"), asm, iss.URL)
		}
		tok := ls.step(t, "token")
		if aud, _ := tok["aud"].([]any); tok.str("sub") != "carol" || tok.str("iss") != iss.URL || len(aud) != 1 || aud[0] != url {
			t.Errorf("token %v, want sub carol, iss %s, aud %s (the resource, RFC 8707)", tok, iss.URL, url)
		}
		if tools, _ := ls.step(t, "tools")["tools"].([]any); !slices.Contains(tools, any("claims_scenario")) {
			t.Errorf("tools = %v, want claims_scenario among them", tools)
		}
		raw, _ := json.Marshal(ls.step(t, "called").obj("structuredContent"))
		var r struct {
			LocalWorkflowID string             `json:"local_workflow_id"`
			Outcome         *contracts.Outcome `json:"outcome"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || r.Outcome == nil || r.Outcome.Status != contracts.StatusCompleted {
			t.Fatalf("claims_scenario: %s (%v), want completed", raw, err)
		}
		if got := e.starterOf(t, r.LocalWorkflowID); got != "carol" {
			t.Errorf("DelegationStarter = %q, want the token's sub carol", got)
		}
	})
}
