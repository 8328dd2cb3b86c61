package cards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// normalizeForms rewrites the parts of a card body that the spec's JSON
// can carry in more than one form into the one form a2a-go v2.4.0's card
// parser (a2acompat/a2av0) reads, so that every form reads alike. The
// body as received stays what is digested and verified (A2A 1.0 §8.4.1);
// only the parse sees the rewrite.
//
// Why a seam here: a2a-go reads a SecurityRequirement only as
// {"schemes": {NAME: [scopes]}}. The proto JSON form A2A 1.0's a2a.proto
// defines (SecurityRequirement.schemes is map<string, StringList>, so
// {"schemes": {NAME: {"list": [scopes]}}}, what the a2a-js 1.x SDK writes)
// failed the whole card as malformed, and the OpenAPI map form
// ({NAME: [scopes]}, A2A 0.3 §5.5 `security`, written by cards that mix
// the two) was read as a requirement with no scheme at all (a2a-go#430).
// It also refuses an A2A 0.3 OAuth2 scheme (OpenAPI 3.0 OAuthFlows
// object) that declares more than one flow, which 0.3 allows.
//
// Forms read, at the card's securityRequirements and each skill's:
//
//	{"schemes": {"oauth": {"list": ["read"]}}}   A2A 1.0 proto JSON (§4.5, a2a.proto)
//	{"schemes": {"oauth": ["read"]}}             a2a-go's own spelling
//	{"oauth": ["read"]}                          OpenAPI map (A2A 0.3 `security`)
//
// and in securitySchemes, an A2A 0.3 {"type": "oauth2", "flows": {...}}
// with several flows keeps one: clientCredentials when declared (the
// flow a worker can use, RFC 6749 §4.4), else the first of
// authorizationCode, deviceCode, password, implicit. A 1.0 proto oneof
// with several flows stays refused (a2a.proto: OAuthFlows is a oneof).
// Errors name the field and the rule.
func normalizeForms(body []byte) ([]byte, error) {
	var card map[string]json.RawMessage
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, err
	}
	changed := false
	if raw, ok := card["securityRequirements"]; ok {
		out, c, err := normalizeRequirements(raw, "securityRequirements")
		if err != nil {
			return nil, err
		}
		card["securityRequirements"], changed = out, changed || c
	}
	if raw, ok := card["skills"]; ok && isArray(raw) {
		var skills []json.RawMessage
		if err := json.Unmarshal(raw, &skills); err != nil {
			return nil, err
		}
		skillsChanged := false
		for i, s := range skills {
			var skill map[string]json.RawMessage
			if json.Unmarshal(s, &skill) != nil || skill == nil {
				continue // the parser names what is wrong with it
			}
			req, ok := skill["securityRequirements"]
			if !ok {
				continue
			}
			out, c, err := normalizeRequirements(req, fmt.Sprintf("skills[%d].securityRequirements", i))
			if err != nil {
				return nil, err
			}
			if c {
				skill["securityRequirements"] = out
				if skills[i], err = json.Marshal(skill); err != nil {
					return nil, err
				}
				skillsChanged = true
			}
		}
		if skillsChanged {
			b, err := json.Marshal(skills)
			if err != nil {
				return nil, err
			}
			card["skills"] = b
			changed = true
		}
	}
	if raw, ok := card["securitySchemes"]; ok {
		out, c, err := normalizeSchemes(raw)
		if err != nil {
			return nil, err
		}
		card["securitySchemes"], changed = out, changed || c
	}
	if !changed {
		return body, nil
	}
	return json.Marshal(card)
}

// normalizeRequirements rewrites a securityRequirements array into
// a2a-go's {"schemes": {NAME: [scopes]}} elements; changed is false when
// it already was in that form (or is not an array: the parser then names
// it).
func normalizeRequirements(raw json.RawMessage, path string) (json.RawMessage, bool, error) {
	if !isArray(raw) {
		return raw, false, nil
	}
	var reqs []json.RawMessage
	if err := json.Unmarshal(raw, &reqs); err != nil {
		return nil, false, err
	}
	out := make([]map[string]map[string][]string, 0, len(reqs))
	changed := false
	for i, r := range reqs {
		p := fmt.Sprintf("%s[%d]", path, i)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil || obj == nil {
			return nil, false, fmt.Errorf("%s: a security requirement must be a JSON object (A2A 1.0 §4.5: {\"schemes\": {NAME: {\"list\": [scopes]}}})", p)
		}
		schemes := obj
		if s, wrapped := obj["schemes"]; wrapped && len(obj) == 1 && isObject(s) {
			// {"schemes": {...}}: the 1.0 form. (An OpenAPI map naming a
			// scheme "schemes" has a list there, not an object.)
			schemes = nil
			if err := json.Unmarshal(s, &schemes); err != nil {
				return nil, false, fmt.Errorf("%s.schemes: %v", p, err)
			}
		} else {
			changed = true
		}
		req := map[string][]string{}
		for name, v := range schemes {
			scopes, form, err := scopesOf(v)
			if err != nil {
				return nil, false, fmt.Errorf("%s.schemes[%q]: %v", p, name, err)
			}
			changed = changed || form
			req[name] = scopes
		}
		out = append(out, map[string]map[string][]string{"schemes": req})
	}
	if !changed {
		return raw, false, nil
	}
	b, err := json.Marshal(out)
	return b, true, err
}

// scopesOf reads the scopes of one scheme: a list of strings, or the
// proto StringList {"list": [...]} (form true: rewritten). null is no
// scopes.
func scopesOf(v json.RawMessage) (scopes []string, form bool, err error) {
	v = bytes.TrimSpace(v)
	switch {
	case bytes.Equal(v, []byte("null")):
		return []string{}, true, nil
	case isArray(v):
		if err := json.Unmarshal(v, &scopes); err != nil {
			return nil, false, fmt.Errorf("the scopes must be strings")
		}
		return scopes, false, nil
	case isObject(v):
		var sl map[string]json.RawMessage
		if err := json.Unmarshal(v, &sl); err != nil {
			return nil, false, err
		}
		for k := range sl {
			if k != "list" {
				return nil, false, fmt.Errorf("a StringList has only the field \"list\" (A2A 1.0 a2a.proto), not %q", k)
			}
		}
		if l, ok := sl["list"]; ok && !bytes.Equal(bytes.TrimSpace(l), []byte("null")) {
			if err := json.Unmarshal(l, &scopes); err != nil {
				return nil, false, fmt.Errorf("list: the scopes must be strings")
			}
		}
		if scopes == nil {
			scopes = []string{}
		}
		return scopes, true, nil
	}
	return nil, false, fmt.Errorf("must be a list of scopes, or {\"list\": [scopes]} (A2A 1.0 §4.5)")
}

// oauthFlowOrder is the flow kept of a 0.3 OAuth2 scheme with several.
var oauthFlowOrder = []string{"clientCredentials", "authorizationCode", "deviceCode", "password", "implicit"}

// normalizeSchemes keeps one flow of each A2A 0.3 OAuth2 scheme that
// declares several (see normalizeForms).
func normalizeSchemes(raw json.RawMessage) (json.RawMessage, bool, error) {
	if !isObject(raw) {
		return raw, false, nil
	}
	var schemes map[string]json.RawMessage
	if err := json.Unmarshal(raw, &schemes); err != nil {
		return nil, false, err
	}
	changed := false
	for name, s := range schemes {
		var scheme map[string]json.RawMessage
		if json.Unmarshal(s, &scheme) != nil || scheme == nil {
			continue
		}
		var typ string
		if json.Unmarshal(scheme["type"], &typ) != nil || !strings.EqualFold(typ, "oauth2") {
			continue
		}
		var flows map[string]json.RawMessage
		if json.Unmarshal(scheme["flows"], &flows) != nil || len(flows) < 2 {
			continue
		}
		for _, keep := range oauthFlowOrder {
			if f, ok := flows[keep]; ok {
				b, err := json.Marshal(map[string]json.RawMessage{keep: f})
				if err != nil {
					return nil, false, err
				}
				scheme["flows"] = b
				break
			}
		}
		b, err := json.Marshal(scheme)
		if err != nil {
			return nil, false, err
		}
		schemes[name] = b
		changed = true
	}
	if !changed {
		return raw, false, nil
	}
	b, err := json.Marshal(schemes)
	return b, true, err
}

func isArray(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '['
}

func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}
