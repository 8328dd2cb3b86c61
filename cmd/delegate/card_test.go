package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// delegate card URL (the same as card fetch URL) shows the card's security
// schemes, the one delegate would use, whether --credentials holds
// credentials for the agent, and the authenticated extended card when it
// can fetch it (A2A 1.0 §3.1.11), never the secret.
func TestCardShowsSecurityAndExtendedCard(t *testing.T) {
	const token = "card-cmd-T0KEN"
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = claimsagent.New(claimsagent.Config{BaseURL: base, RequireBearer: token, ExtendedCard: true})
	srv.Start()
	t.Cleanup(srv.Close)
	creds := writeFile(t, "credentials.json", fmt.Sprintf(`{"origins": {%q: {"bearer": %q}}}`, base, token))

	out, stderr, code := cli(t, "card", base, "--credentials", creds)
	if code != 0 {
		t.Fatalf("card URL: exit %d; stderr %s", code, stderr)
	}
	for _, want := range []string{
		"security:            bearer (http, required): scheme Bearer",
		"scheme used:         bearer: bearer token in the Authorization header",
		"credentials:         held for " + base + " (the interface's origin)",
		"extended card:       sha256:",
		"extended skills:     [" + claimsagent.PublicSkillID + " " + claimsagent.SkillID + "]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("card URL output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+stderr, token) {
		t.Errorf("the output carries the token")
	}

	// Without credentials: the extended card is declared, not read, and
	// says why; --json carries the same.
	out, _, code = cli(t, "card", "fetch", base, "--json")
	if code != 0 {
		t.Fatalf("card fetch --json: exit %d", code)
	}
	var r cardReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !r.ExtendedCardDeclared || r.ExtendedCard != nil || !strings.Contains(r.ExtendedCardError, "holds no credentials") ||
		r.Credentials || len(r.SecuritySchemes) != 1 || r.Scheme == nil || strings.Join(r.Skills, ",") != claimsagent.PublicSkillID {
		t.Errorf("card fetch --json = %+v", r)
	}
}
