package contracts

import (
	"strings"
	"testing"
)

// WhatChanged names each change of a card that matters to a delegation,
// and nothing for a change that does not (a new digest, a new version).
func TestWhatChanged(t *testing.T) {
	iface := Interface{URL: "http://agent/a2a", Binding: "JSONRPC", Version: "1.0"}
	inUse := CardInUse{Interface: iface, Signature: CardVerification{Status: SigUnsigned}}
	card := ResolvedCard{Agent: AgentInfo{CardDigest: "sha256:01", CardVersion: "2"}, SkillFound: true, Interface: iface, Verification: CardVerification{Status: SigUnsigned}}
	if got := inUse.WhatChanged(card, "open-claim"); got != "" {
		t.Errorf("an unchanged card: %q, want nothing", got)
	}
	moved := card
	moved.SkillFound, moved.Interface.URL = false, "http://agent/v2"
	got := inUse.WhatChanged(moved, "open-claim")
	for _, want := range []string{`skill "open-claim" is gone`, "interface changed from JSONRPC 1.0 http://agent/a2a to JSONRPC 1.0 http://agent/v2"} {
		if !strings.Contains(got, want) {
			t.Errorf("WhatChanged = %q, want it to name %q", got, want)
		}
	}
	untrusted := card
	untrusted.SignatureRequired = true
	if got := inUse.WhatChanged(untrusted, "open-claim"); got != "the card is no longer trusted" || untrusted.Trusted() || untrusted.Usable() {
		t.Errorf("a card that now needs a signature it lacks: %q, trusted %v, usable %v", got, untrusted.Trusted(), untrusted.Usable())
	}
	if !card.Usable() {
		t.Error("a trusted card with the skill and an interface is usable")
	}
}
