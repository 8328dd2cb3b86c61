package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Credentials is the worker-side credential store (`--credentials FILE` or
// DELEGATE_CREDENTIALS). Secrets live only here: never in workflow input,
// history, logs or errors; activities look them up at call time.
//
//	{
//	  "origins": {
//	    "https://claims.example": {"bearer": "eyJ..."},
//	    "https://other.example":  {"api_key": "k-123"}
//	  },
//	  "refs": {
//	    "claims-prod": {"bearer": "eyJ...", "origins": ["https://claims.example"]}
//	  }
//	}
//
// An origin entry is used for every call to an agent interface on that
// origin; which header carries it is chosen by the card's securitySchemes
// (A2A 1.0 §4.5: an HTTP bearer scheme → Authorization: Bearer, an apiKey
// scheme in a header → that header). A ref entry is named by an operator
// answering AUTH_REQUIRED (Answer.credential_ref) and is used for the
// follow-up of that task, and only when the task's agent is on one of the
// ref's origins (required): an agent cannot obtain another agent's
// credential by asking for it.
type Credentials struct {
	Origins map[string]Secret `json:"origins"`
	Refs    map[string]Ref    `json:"refs"`
}

// Ref is a credential an operator names, bound to the origins it may be
// sent to.
type Ref struct {
	Secret
	Origins []string `json:"origins"`
}

// ErrRefUnknown: no credential of that name. ErrRefNotAllowed: the
// credential may not be sent to that origin.
var (
	ErrRefUnknown    = errors.New("the credential_ref is not in the worker's credential store")
	ErrRefNotAllowed = errors.New("the credential_ref may not be sent to this agent's origin")
)

// Secret is one credential. Its String never shows the value.
type Secret struct {
	Bearer string `json:"bearer,omitempty"`
	APIKey string `json:"api_key,omitempty"`
}

func (s Secret) String() string { return "[secret]" }

// GoString hides the value from %#v too.
func (s Secret) GoString() string { return "[secret]" }

func (s Secret) empty() bool { return s.Bearer == "" && s.APIKey == "" }

// LoadCredentials reads a credential store. Errors never quote the file's
// content.
func LoadCredentials(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Credentials
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("credentials %s: not a valid credential store (the content is not shown)", path)
	}
	origins := map[string]Secret{}
	for o, s := range c.Origins {
		n, err := cards.Origin(o)
		if err != nil {
			return nil, fmt.Errorf("credentials %s: origins[%q]: %w", path, o, err)
		}
		if s.empty() || (s.Bearer != "" && s.APIKey != "") {
			return nil, fmt.Errorf("credentials %s: origins[%q]: give exactly one of bearer, api_key", path, o)
		}
		if _, dup := origins[n]; dup {
			return nil, fmt.Errorf("credentials %s: origins[%q]: origin %s is given twice", path, o, n)
		}
		origins[n] = s
	}
	c.Origins = origins
	for r, s := range c.Refs {
		if s.empty() || (s.Bearer != "" && s.APIKey != "") {
			return nil, fmt.Errorf("credentials %s: refs[%q]: give exactly one of bearer, api_key", path, r)
		}
		if len(s.Origins) == 0 {
			return nil, fmt.Errorf("credentials %s: refs[%q].origins: required: the origins this credential may be sent to", path, r)
		}
		for i, o := range s.Origins {
			n, err := cards.Origin(o)
			if err != nil {
				return nil, fmt.Errorf("credentials %s: refs[%q].origins[%d]: %w", path, r, i, err)
			}
			s.Origins[i] = n
		}
		c.Refs[r] = s
	}
	return &c, nil
}

// ForOrigin returns the secret for an origin.
func (c *Credentials) ForOrigin(origin string) (Secret, bool) {
	if c == nil {
		return Secret{}, false
	}
	s, ok := c.Origins[origin]
	return s, ok
}

// ForRef returns the secret a reference names, when origin is one of the
// reference's origins. Errors: ErrRefUnknown, ErrRefNotAllowed (wrapped,
// naming the origin and the ref's origins; never the secret).
func (c *Credentials) ForRef(ref, origin string) (Secret, error) {
	if c == nil {
		return Secret{}, ErrRefUnknown
	}
	s, ok := c.Refs[ref]
	if !ok {
		return Secret{}, ErrRefUnknown
	}
	if !slices.Contains(s.Origins, origin) {
		return Secret{}, fmt.Errorf("%w: %s is not among its origins %v", ErrRefNotAllowed, origin, s.Origins)
	}
	return s.Secret, nil
}

// credentialInterceptor adds a secret to every call (a2a-go call
// interceptor); the secret never leaves the request headers.
type credentialInterceptor struct {
	sdk.PassthroughInterceptor
	scheme contracts.AuthScheme
	secret Secret
}

func (ci *credentialInterceptor) Before(ctx context.Context, req *sdk.Request) (context.Context, any, error) {
	if req.ServiceParams == nil {
		return ctx, nil, nil
	}
	switch {
	case ci.scheme.Kind == "api_key" && ci.secret.APIKey != "":
		req.ServiceParams[ci.scheme.Header] = []string{ci.secret.APIKey}
	case ci.secret.Bearer != "":
		req.ServiceParams["Authorization"] = []string{"Bearer " + ci.secret.Bearer}
	case ci.secret.APIKey != "":
		header := ci.scheme.Header
		if header == "" {
			header = "X-API-Key"
		}
		req.ServiceParams[header] = []string{ci.secret.APIKey}
	}
	return ctx, nil, nil
}

// WithCredential returns options that add secret to every call, in the way
// scheme says (a nil scheme: bearer, or the X-API-Key header for an API key),
// and redact it from everything the agent sends back (Redacted).
func (o Options) WithCredential(scheme *contracts.AuthScheme, secret Secret) Options {
	s := contracts.AuthScheme{Kind: "bearer"}
	if scheme != nil {
		s = *scheme
	}
	o.Interceptors = append(append([]sdk.CallInterceptor(nil), o.Interceptors...), &credentialInterceptor{scheme: s, secret: secret})
	o.secrets = append(append([]string(nil), o.secrets...), secret.Bearer, secret.APIKey)
	return o
}
