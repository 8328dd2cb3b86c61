package cards

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/lestrrat-go/jwx/v2/jwa"
)

// securedCard is a 1.0 card with an OAuth 2.0 client-credentials scheme;
// REQ is replaced by the card's securityRequirements and SKILLREQ by its
// skill's.
const securedCard = `{
  "name": "Carrier", "description": "d", "version": "1",
  "supportedInterfaces": [{"url": "https://carrier.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
  "capabilities": {},
  "securitySchemes": {
    "carrier-oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://auth.carrier.example/token", "scopes": {"claims:write": "open claims"}}}}},
    "carrier-key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Carrier-Key"}}
  },
  "securityRequirements": REQ,
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["application/json"],
  "skills": [{"id": "open-claim", "name": "Open", "description": "d", "tags": [], "securityRequirements": SKILLREQ}]
}`

func secured(req, skillReq string) []byte {
	return []byte(strings.NewReplacer("SKILLREQ", skillReq, "REQ", req).Replace(securedCard))
}

// The proto JSON form of SecurityRequirement (A2A 1.0 a2a.proto:
// map<string, StringList>), the a2a-go form and the OpenAPI map form all
// read as the same requirements, at the card and at a skill. Before the
// seam the proto form was refused ("cannot unmarshal object into ...
// SecuritySchemeScopes") and the map form read as a requirement naming
// no scheme.
func TestParseSecurityRequirementForms(t *testing.T) {
	want := a2a.SecurityRequirementsOptions{{"carrier-oauth": {"claims:write"}}, {"carrier-key": {}}}
	for name, req := range map[string]string{
		"proto":  `[{"schemes": {"carrier-oauth": {"list": ["claims:write"]}}}, {"schemes": {"carrier-key": {}}}]`,
		"a2a-go": `[{"schemes": {"carrier-oauth": ["claims:write"]}}, {"schemes": {"carrier-key": []}}]`,
		"map":    `[{"carrier-oauth": ["claims:write"]}, {"carrier-key": []}]`,
		"mixed":  `[{"schemes": {"carrier-oauth": {"list": ["claims:write"]}}}, {"carrier-key": null}]`,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse(secured(req, req))
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			for where, got := range map[string]a2a.SecurityRequirementsOptions{
				"card": c.Parsed.SecurityRequirements, "skill": c.Parsed.Skills[0].SecurityRequirements,
			} {
				if !sameRequirements(got, want) {
					t.Errorf("%s securityRequirements = %v, want %v", where, got, want)
				}
			}
			if s := SchemeOf(c.Parsed, nil); s == nil || s.Kind != "oauth2" || s.Name != "carrier-oauth" || s.TokenURL != "https://auth.carrier.example/token" {
				t.Errorf("SchemeOf() = %+v, want the OAuth 2.0 scheme of the first requirement", s)
			}
		})
	}
}

// The digest and so the signature are over the card as received, never
// over the rewrite: two forms of one card have two digests, and a card's
// digest does not change with the normalization.
func TestParseFormsKeepsDigestOfReceivedBody(t *testing.T) {
	body := secured(`[{"schemes": {"carrier-oauth": {"list": ["claims:write"]}}}]`, `[]`)
	c, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Digest(body)
	if err != nil {
		t.Fatal(err)
	}
	if c.Digest != d || string(c.Raw) != string(body) {
		t.Errorf("Parse kept digest %s / raw of %d bytes, want %s of the body as received", c.Digest, len(c.Raw), d)
	}
}

// A requirement in neither form is refused naming where and the rule.
func TestParseSecurityRequirementBadForms(t *testing.T) {
	for name, tc := range map[string]struct{ req, want string }{
		"scopes not strings": {`[{"schemes": {"carrier-oauth": {"list": [1]}}}]`, `securityRequirements[0].schemes["carrier-oauth"]: list: the scopes must be strings`},
		"unknown list field": {`[{"schemes": {"carrier-oauth": {"values": ["a"]}}}]`, `only the field "list"`},
		"scalar":             {`[{"carrier-oauth": "claims:write"}]`, `must be a list of scopes, or {"list": [scopes]}`},
		"not an object":      {`["carrier-oauth"]`, `securityRequirements[0]: a security requirement must be a JSON object`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(secured(tc.req, `[]`))
			var ce *Error
			if !errors.As(err, &ce) || ce.Kind != "malformed" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse() error = %v, want malformed naming %q", err, tc.want)
			}
		})
	}
	_, err := Parse(secured(`[]`, `[{"schemes": {"x": 7}}]`))
	if err == nil || !strings.Contains(err.Error(), `skills[0].securityRequirements[0].schemes["x"]`) {
		t.Errorf("skill-level error = %v, want it to name skills[0]", err)
	}
}

// An A2A 0.3 OAuth2 scheme may declare several flows (OpenAPI 3.0
// OAuthFlows); a2a-go refused the card. The client-credentials flow is
// kept. A 1.0 oneof with two flows stays refused.
func TestParse03OAuthSeveralFlows(t *testing.T) {
	card := `{
  "protocolVersion": "0.3.0", "name": "Legacy", "description": "d", "version": "1",
  "url": "https://legacy.example/a2a", "preferredTransport": "JSONRPC", "capabilities": {},
  "securitySchemes": {"oauth": {"type": "oauth2", "flows": {
     "authorizationCode": {"authorizationUrl": "https://auth.example/authorize", "tokenUrl": "https://auth.example/token", "scopes": {}},
     "clientCredentials": {"tokenUrl": "https://auth.example/cc-token", "scopes": {"claims": "c"}}}}},
  "security": [{"oauth": ["claims"]}],
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "open-claim", "name": "Open", "description": "d", "tags": []}]
}`
	c, err := Parse([]byte(card))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	o, ok := c.Parsed.SecuritySchemes["oauth"].(a2a.OAuth2SecurityScheme)
	if !ok {
		t.Fatalf("scheme = %T", c.Parsed.SecuritySchemes["oauth"])
	}
	if cc, ok := o.Flows.(a2a.ClientCredentialsOAuthFlow); !ok || cc.TokenURL != "https://auth.example/cc-token" {
		t.Errorf("flows = %+v, want the clientCredentials flow", o.Flows)
	}
	if !sameRequirements(c.Parsed.SecurityRequirements, a2a.SecurityRequirementsOptions{{"oauth": {"claims"}}}) {
		t.Errorf("security = %v", c.Parsed.SecurityRequirements)
	}

	two := strings.Replace(securedCard, `{"clientCredentials": {"tokenUrl": "https://auth.carrier.example/token", "scopes": {"claims:write": "open claims"}}}`,
		`{"clientCredentials": {"tokenUrl": "https://a/t", "scopes": {}}, "implicit": {"authorizationUrl": "https://a/a", "scopes": {}}}`, 1)
	if _, err := Parse(secured2(two)); err == nil || !strings.Contains(err.Error(), "exactly one OAuth flow") {
		t.Errorf("1.0 oneof with two flows: error = %v, want refused", err)
	}
}

func secured2(card string) []byte {
	return []byte(strings.NewReplacer("SKILLREQ", "[]", "REQ", "[]").Replace(card))
}

func sameRequirements(a, b a2a.SecurityRequirementsOptions) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for k, v := range a[i] {
			w, ok := b[i][k]
			if !ok || !slices.Equal(v, w) {
				return false
			}
		}
	}
	return true
}

// A card signed in the proto JSON form verifies, and what is used
// afterwards (parsed from the verified payload) carries its requirements.
func TestSignedProtoFormCard(t *testing.T) {
	k := newKey(t, jwa.ES256, "carrier-2026")
	ts := trustWith(t, AgentTrust{JWKS: jwks(t, k)})
	body := sign(t, string(secured(`[{"schemes": {"carrier-oauth": {"list": ["claims:write"]}}}]`, `[]`)), k, "")
	v := Verify(context.Background(), body, origin, ts, nil, now)
	if v.Label() != "verified:carrier-2026" {
		t.Fatalf("Verify() = %+v", v)
	}
	c, err := Parse(v.Payload)
	if err != nil {
		t.Fatalf("Parse(payload) error = %v", err)
	}
	if !sameRequirements(c.Parsed.SecurityRequirements, a2a.SecurityRequirementsOptions{{"carrier-oauth": {"claims:write"}}}) {
		t.Errorf("requirements = %v", c.Parsed.SecurityRequirements)
	}
}
