package main

import (
	"net"
	"testing"
)

// delegate mcp refuses a bad command line and bad templates before it
// dials Temporal (nothing listens at the address given), naming the flag,
// the template and the field.
func TestMCPCommandRefuses(t *testing.T) {
	tmpl := "../../mcp/examples/templates.json"
	noServer := []string{"--address", "127.0.0.1:1"}
	with := func(args ...string) []string { return append(append([]string{"mcp"}, args...), noServer...) }
	wantExit(t, exitUsage, []string{"--templates FILE is required"}, with("--stdio", "--actor", "alice")...)
	wantExit(t, exitUsage, []string{"exactly one transport"}, with("--templates", tmpl)...)
	wantExit(t, exitUsage, []string{"exactly one transport"}, with("--templates", tmpl, "--stdio", "--actor", "a", "--addr", "127.0.0.1:0")...)
	wantExit(t, exitUsage, []string{"--actor NAME is required with --stdio"}, with("--templates", tmpl, "--stdio")...)
	wantExit(t, exitUsage, []string{"--actor: 1 to 200 bytes"}, with("--templates", tmpl, "--stdio", "--actor", `al"ice`)...)
	wantExit(t, exitUsage, []string{"--tokens, --issuer, --audience, --resource-url and --allowed-origins are for --addr"}, with("--templates", tmpl, "--stdio", "--actor", "a", "--tokens", "x")...)
	wantExit(t, exitUsage, []string{"are for --addr"}, with("--templates", tmpl, "--stdio", "--actor", "a", "--allowed-origins", "https://app.example")...)
	wantExit(t, exitUsage, []string{"--addr needs --tokens FILE and/or --issuer"}, with("--templates", tmpl, "--addr", "127.0.0.1:0")...)
	wantExit(t, exitUsage, []string{"--actor is for --stdio"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--actor", "a", "--tokens", "x")...)
	wantExit(t, exitUsage, []string{"--issuer and --audience go together"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--issuer", "http://127.0.0.1:1")...)
	wantExit(t, exitUsage, []string{"--resource-url", "no user information, query or fragment"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--tokens", "x", "--resource-url", "https://mcp.example.com/mcp?x=1")...)
	wantExit(t, exitUsage, []string{"--resource-url", "absolute http or https URL"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--tokens", "x", "--resource-url", "/mcp")...)
	wantExit(t, exitUsage, []string{"--allowed-origins", `origin "https://app.example/ui"`, "no path"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--tokens", "x", "--allowed-origins", "http://localhost:3000,https://app.example/ui")...)
	bad := writeFile(t, "templates.json", `{"templates": [{"name": "open_claim", "description": "d",
		"agent_card_url": "http://127.0.0.1:9999", "skill": "open-claim", "purpose": "p", "allowed_outputs": ["claim_opened"],
		"deadline_after": "-1h", "text": "order {{order}}", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
		"answer": "human"}]}`)
	wantExit(t, exitUsage, []string{`templates[0] "open_claim": deadline_after: must be a positive duration`,
		`templates[0] "open_claim": text: placeholder {{order}} names no declared parameter`}, with("--templates", bad, "--stdio", "--actor", "a")...)
	tokens := writeFile(t, "tokens.json", `{"tokens": [{"actor": "alice", "sha256": "nothex"}]}`)
	wantExit(t, exitUsage, []string{"--tokens", "tokens[0].sha256"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--tokens", tokens)...)
	wantExit(t, exitUsage, []string{"--starter"}, "list", "--starter", `a"b`, "--address", "127.0.0.1:1")
}

// The default --resource-url: the host --addr names, the port bound.
func TestDefaultResourceURL(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"127.0.0.1:0", "http://127.0.0.1:4242/mcp"},
		{"localhost:8990", "http://localhost:4242/mcp"},
		{"[::1]:8990", "http://[::1]:4242/mcp"},
		{":8990", "http://localhost:4242/mcp"},
		{"0.0.0.0:8990", "http://localhost:4242/mcp"},
	} {
		if got := defaultResourceURL(c.addr, &net.TCPAddr{Port: 4242}); got != c.want {
			t.Errorf("defaultResourceURL(%q) = %s, want %s", c.addr, got, c.want)
		}
	}
}
