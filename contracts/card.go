package contracts

// Interface is the selected A2A interface: where and how to talk to the agent.
type Interface struct {
	URL     string `json:"url"`
	Binding string `json:"binding"` // "JSONRPC", "HTTP+JSON" or "GRPC"
	Version string `json:"version"` // "1.0" or "0.3": the wire spoken
	// DeclaredVersion is the card's protocolVersion as given, when it is
	// not the one spoken: an interface at 0.2.x (trpc-a2a-go's cards say
	// "0.2.5") is spoken as the 0.3 wire, whose methods and shapes 0.2.5
	// already has (A2A 0.3 §7: message/send, tasks/get, tasks/cancel,
	// tasks/resubscribe). Empty when Version is what the card says.
	DeclaredVersion string `json:"declared_version,omitempty"`
	Tenant          string `json:"tenant,omitempty"`
	// CardOrigin is the origin of the card the interface came from; the
	// HTTP guard applies that origin's trust entry to the calls.
	CardOrigin string `json:"card_origin,omitempty"`
	// Auth is how the card wants calls authenticated (no secret).
	Auth *AuthScheme `json:"auth,omitempty"`
}

// AuthScheme says how a card wants to be authenticated (A2A 1.0 §4.5),
// without any secret. It is recorded in workflow history (Interface.Auth):
// every field is public information from the card.
//
// Kind is one of:
//   - "bearer": Authorization: Bearer <token> (an HTTP bearer scheme, A2A
//     1.0 §4.5.3; histories recorded before "oauth2"/"oidc" existed also
//     hold it for those schemes);
//   - "api_key": an API key in the header Header, or (In "query" or
//     "cookie") in the query parameter or cookie Param (§4.5.2);
//   - "oauth2": a bearer token from an OAuth 2.0 client credentials grant
//     (RFC 6749 §4.4; §4.5.4 OAuth2SecurityScheme), TokenURL being the
//     card's flows.clientCredentials.tokenUrl;
//   - "oidc": a bearer token from the token endpoint of an OpenID Connect
//     provider (§4.5.5), OpenIDConnectURL being the card's
//     openIdConnectUrl (its discovery document);
//   - "mtls": a TLS client certificate (§4.5.6 MutualTlsSecurityScheme).
type AuthScheme struct {
	Kind   string `json:"kind"`
	Header string `json:"header,omitempty"`
	// Name is the card's name of the scheme (a key of securitySchemes).
	Name string `json:"name,omitempty"`
	// In is where an API key goes: "header" (or empty), "query", "cookie".
	In string `json:"in,omitempty"`
	// Param is the query parameter or cookie name of an API key.
	Param string `json:"param,omitempty"`
	// TokenURL is the card's clientCredentials tokenUrl (shown and
	// compared with the worker's store, never used to send a secret).
	TokenURL string `json:"token_url,omitempty"`
	// OpenIDConnectURL is the card's openIdConnectUrl (compared with the
	// store's issuer, never followed with a secret).
	OpenIDConnectURL string `json:"openid_connect_url,omitempty"`
	// Scopes are the scopes the card's security requirement names.
	Scopes []string `json:"scopes,omitempty"`
	// WithMTLS reports that the same requirement also asks for a client
	// certificate (an "mtls" scheme ANDed with this one).
	WithMTLS bool `json:"with_mtls,omitempty"`
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
