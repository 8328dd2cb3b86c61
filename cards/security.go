package cards

import (
	"fmt"
	"slices"
	"sort"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// SchemeInfo describes one security scheme a card declares (A2A 1.0 §4.5,
// securitySchemes), without any secret, for people: `delegate card`.
type SchemeInfo struct {
	// Name is the scheme's name in the card.
	Name string `json:"name"`
	// Type is the scheme's kind: "oauth2", "openIdConnect", "http",
	// "apiKey" or "mutualTLS" (the OpenAPI 3 names, as A2A 0.3 writes
	// them; A2A 1.0 §4.5.1 SecurityScheme oneof).
	Type string `json:"type"`
	// Detail is what a client needs to know of it: the OAuth 2.0 flow and
	// its tokenUrl and scopes, the OpenID Connect discovery URL, the HTTP
	// scheme, where an API key goes. Remote text, cut to 300 bytes.
	Detail string `json:"detail,omitempty"`
	// TokenURL is an OAuth 2.0 client-credentials flow's tokenUrl, and
	// OpenIDConnectURL an OpenID Connect scheme's discovery URL (A2A 1.0
	// §4.5.4, §4.5.5): what the worker's credential store must match.
	TokenURL         string `json:"token_url,omitempty"`
	OpenIDConnectURL string `json:"openid_connect_url,omitempty"`
	// Required reports whether the card's securityRequirements (or a
	// skill's) name it; Scopes are the scopes they ask for.
	Required bool     `json:"required"`
	Scopes   []string `json:"scopes,omitempty"`
}

// Schemes describes the security schemes of a card, in name order, with
// the requirements of the card and of its skills folded in.
func Schemes(card *a2a.AgentCard) []SchemeInfo {
	if card == nil {
		return nil
	}
	scopes := map[a2a.SecuritySchemeName][]string{}
	required := map[a2a.SecuritySchemeName]bool{}
	addReqs := func(reqs a2a.SecurityRequirementsOptions) {
		for _, req := range reqs {
			for n, sc := range req {
				required[n] = true
				for _, s := range sc {
					if !slices.Contains(scopes[n], s) {
						scopes[n] = append(scopes[n], s)
					}
				}
			}
		}
	}
	addReqs(card.SecurityRequirements)
	for _, s := range card.Skills {
		addReqs(s.SecurityRequirements)
	}
	names := make([]string, 0, len(card.SecuritySchemes))
	for n := range card.SecuritySchemes {
		names = append(names, string(n))
	}
	sort.Strings(names)
	out := make([]SchemeInfo, 0, len(names))
	for _, n := range names {
		name := a2a.SecuritySchemeName(n)
		info := SchemeInfo{Name: contracts.CutText(n, 100), Required: required[name], Scopes: scopes[name]}
		switch v := card.SecuritySchemes[name].(type) {
		case a2a.OAuth2SecurityScheme:
			info.Type = "oauth2"
			switch f := v.Flows.(type) {
			case a2a.ClientCredentialsOAuthFlow:
				info.TokenURL = f.TokenURL
				info.Detail = fmt.Sprintf("client credentials, tokenUrl %s, scopes %v", f.TokenURL, scopeNames(f.Scopes))
			case a2a.AuthorizationCodeOAuthFlow:
				info.Detail = "authorization code (a flow for a person; a worker cannot use it)"
			case a2a.DeviceCodeOAuthFlow:
				info.Detail = "device code (a flow for a person; a worker cannot use it)"
			case a2a.ImplicitOAuthFlow:
				info.Detail = "implicit (a flow for a person; a worker cannot use it)"
			case a2a.PasswordOAuthFlow:
				info.Detail = "password (a worker does not use it)"
			}
		case a2a.OpenIDConnectSecurityScheme:
			info.Type = "openIdConnect"
			info.OpenIDConnectURL = v.OpenIDConnectURL
			info.Detail = "discovery " + v.OpenIDConnectURL
		case a2a.HTTPAuthSecurityScheme:
			info.Type = "http"
			info.Detail = "scheme " + v.Scheme
			if v.BearerFormat != "" {
				info.Detail += ", format " + v.BearerFormat
			}
		case a2a.APIKeySecurityScheme:
			info.Type = "apiKey"
			info.Detail = fmt.Sprintf("in %s %q", v.Location, v.Name)
		case a2a.MutualTLSSecurityScheme:
			info.Type = "mutualTLS"
			info.Detail = "a client certificate"
		default:
			info.Type = fmt.Sprintf("%T", v)
		}
		info.Detail = contracts.CutText(info.Detail, 300)
		info.TokenURL, info.OpenIDConnectURL = contracts.CutText(info.TokenURL, 300), contracts.CutText(info.OpenIDConnectURL, 300)
		out = append(out, info)
	}
	return out
}

func scopeNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
