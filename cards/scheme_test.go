package cards

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// SchemeOf takes the first requirement the worker's store can meet, and
// records what the card says of it (A2A 1.0 §4.5).
func TestSchemeOfPrefersWhatTheStoreHas(t *testing.T) {
	card := &a2a.AgentCard{
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"corp": a2a.OAuth2SecurityScheme{Flows: a2a.ClientCredentialsOAuthFlow{TokenURL: "https://idp.example/token", Scopes: map[string]string{"tasks": ""}}},
			"sso":  a2a.OpenIDConnectSecurityScheme{OpenIDConnectURL: "https://login.example/.well-known/openid-configuration"},
			"qkey": a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationQuery, Name: "api_key"},
			"ckey": a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationCookie, Name: "session"},
			"hkey": a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-Key"},
			"cert": a2a.MutualTLSSecurityScheme{},
			"jwt":  a2a.HTTPAuthSecurityScheme{Scheme: "Bearer"},
		},
		SecurityRequirements: a2a.SecurityRequirementsOptions{
			{"corp": {"tasks"}, "cert": {}},
			{"sso": {}},
			{"qkey": {}},
			{"ckey": {}},
			{"cert": {}},
			{"hkey": {}, "jwt": {}}, // two credentials at once: never met
		},
	}
	only := func(kinds ...string) func(string) bool {
		return func(k string) bool {
			for _, x := range kinds {
				if x == k {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name string
		has  func(string) bool
		want *contracts.AuthScheme
	}{
		{"oauth2 and a certificate", only("oauth2", "mtls"), &contracts.AuthScheme{Kind: "oauth2", Name: "corp", TokenURL: "https://idp.example/token", Scopes: []string{"tasks"}, WithMTLS: true}},
		{"oidc", only("oidc"), &contracts.AuthScheme{Kind: "oidc", Name: "sso", OpenIDConnectURL: "https://login.example/.well-known/openid-configuration"}},
		{"api key", only("api_key"), &contracts.AuthScheme{Kind: "api_key", Name: "qkey", In: "query", Param: "api_key"}},
		{"certificate alone", only("mtls"), &contracts.AuthScheme{Kind: "mtls", Name: "cert"}},
		{"nothing: the card's first", only(), &contracts.AuthScheme{Kind: "oauth2", Name: "corp", TokenURL: "https://idp.example/token", Scopes: []string{"tasks"}, WithMTLS: true}},
		{"no store asked", nil, &contracts.AuthScheme{Kind: "oauth2", Name: "corp", TokenURL: "https://idp.example/token", Scopes: []string{"tasks"}, WithMTLS: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SchemeOf(card, tc.has); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SchemeOf() = %+v, want %+v", got, tc.want)
			}
		})
	}
	// What existed before keeps its shape: a header API key, a bearer.
	hdr := &a2a.AgentCard{SecuritySchemes: a2a.NamedSecuritySchemes{"k": a2a.APIKeySecurityScheme{Location: "header", Name: "X-Key"}}}
	if got := SchemeOf(hdr, nil); got == nil || got.Kind != "api_key" || got.Header != "X-Key" || got.In != "" {
		t.Errorf("header api key: %+v", got)
	}
	bearer := &a2a.AgentCard{SecuritySchemes: a2a.NamedSecuritySchemes{"b": a2a.HTTPAuthSecurityScheme{Scheme: "bearer"}, "basic": a2a.HTTPAuthSecurityScheme{Scheme: "basic"}}}
	if got := SchemeOf(bearer, nil); got == nil || got.Kind != "bearer" {
		t.Errorf("bearer: %+v", got)
	}
}

// What a card puts into the recorded scheme is bounded (it goes into
// workflow history).
func TestSchemeOfIsBounded(t *testing.T) {
	scopes := make(a2a.SecuritySchemeScopes, 1000)
	for i := range scopes {
		scopes[i] = strings.Repeat("s", 5000)
	}
	card := &a2a.AgentCard{
		SecuritySchemes: a2a.NamedSecuritySchemes{
			"o": a2a.OAuth2SecurityScheme{Flows: a2a.ClientCredentialsOAuthFlow{TokenURL: "https://idp.example/" + strings.Repeat("t", 100000)}},
			"k": a2a.APIKeySecurityScheme{Location: "query", Name: strings.Repeat("n", 1000)},
		},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"o": scopes}},
	}
	got := SchemeOf(card, nil)
	b, _ := json.Marshal(got)
	if got == nil || len(got.Scopes) != maxSchemeScopes || len(b) > 32*1024 {
		t.Errorf("SchemeOf() recorded %d bytes, %d scopes; want at most 32 KiB, %d scopes", len(b), len(got.Scopes), maxSchemeScopes)
	}
	if s := schemeFor("k", card.SecuritySchemes["k"], nil); s != nil {
		t.Errorf("an API key named with 1000 bytes was usable: %+v", s)
	}
}
