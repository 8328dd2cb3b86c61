package contracts

// Interface is the selected A2A interface: where and how to talk to the agent.
type Interface struct {
	URL     string `json:"url"`
	Binding string `json:"binding"` // "JSONRPC", "HTTP+JSON" or "GRPC"
	Version string `json:"version"` // "1.0" or "0.3"
	Tenant  string `json:"tenant,omitempty"`
	// CardOrigin is the origin of the card the interface came from; the
	// HTTP guard applies that origin's trust entry to the calls.
	CardOrigin string `json:"card_origin,omitempty"`
	// Auth is how the card wants calls authenticated (no secret).
	Auth *AuthScheme `json:"auth,omitempty"`
}

// AuthScheme says how a card wants to be authenticated (A2A 1.0 §4.5),
// without any secret: "bearer" (Authorization header) or "api_key" (the
// named header).
type AuthScheme struct {
	Kind   string `json:"kind"`
	Header string `json:"header,omitempty"`
}

// Card signature results (CardVerification.Status; Outcome agent.signature
// is CardVerification.Label()).
const (
	SigVerified   = "verified"
	SigUnsigned   = "unsigned"
	SigUnverified = "unverified"
)

// CardVerification is the result of verifying an Agent Card's signatures
// (A2A 1.0 §8.4: JWS over the RFC 8785 canonical card; package cards).
type CardVerification struct {
	// Status is "verified", "unsigned" (no signature) or "unverified"
	// (signed, but no signature verified with a trusted key).
	Status string `json:"status"`
	// KeyID is the kid of the key that verified, when verified.
	KeyID string `json:"kid,omitempty"`
	// Reason says why no signature verified (one clause per signature).
	Reason string `json:"reason,omitempty"`
	// Payload is the canonical JSON the verified signature covers; the
	// card used afterwards is parsed from it (so nothing unsigned reaches
	// the delegation).
	Payload []byte `json:"-"`
}

// Label is "verified:<kid>", "unsigned" or "unverified".
func (v CardVerification) Label() string {
	if v.Status == SigVerified {
		return SigVerified + ":" + v.KeyID
	}
	return v.Status
}
