package main

import (
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
	wantExit(t, exitUsage, []string{"--tokens, --issuer and --audience are for --addr"}, with("--templates", tmpl, "--stdio", "--actor", "a", "--tokens", "x")...)
	wantExit(t, exitUsage, []string{"--addr needs --tokens FILE and/or --issuer"}, with("--templates", tmpl, "--addr", "127.0.0.1:0")...)
	wantExit(t, exitUsage, []string{"--actor is for --stdio"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--actor", "a", "--tokens", "x")...)
	wantExit(t, exitUsage, []string{"--issuer and --audience go together"}, with("--templates", tmpl, "--addr", "127.0.0.1:0", "--issuer", "http://127.0.0.1:1")...)
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
