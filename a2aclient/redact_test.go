package a2aclient

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2adelegate/delegate/contracts"
)

// An agent that sends the worker's credential back (a debug error that
// quotes the request's headers, a status text, an artifact) does not get
// it into what the client returns, so not into history, status, the UI or
// logs: it was recorded as sent ("you sent Bearer SECRET-…").
func TestEchoedSecretIsRedacted(t *testing.T) {
	const secret = "SECRET-ORIGIN-28001"
	echo := func(r *http.Request) string { return r.Header.Get("Authorization") }
	for name, tc := range map[string]struct {
		reply func(w http.ResponseWriter, r *http.Request, m string)
		call  func(c *Client) (contracts.TaskSnapshot, error)
	}{
		"status text": {func(w http.ResponseWriter, r *http.Request, m string) {
			rpcResult(w, fmt.Sprintf(`{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"s-1","role":"ROLE_AGENT","parts":[{"text":"failed; you sent %s"}]}}}`, echo(r)))
		}, func(c *Client) (contracts.TaskSnapshot, error) { return c.GetTask(context.Background(), "t-1", "") }},
		"artifact": {func(w http.ResponseWriter, r *http.Request, m string) {
			rpcResult(w, fmt.Sprintf(`{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a-1","name":"claim_opened","metadata":{"seen":%q},"parts":[{"data":{"header":%q,"b64":%q}},{"raw":%q}]}]}`,
				echo(r), echo(r), base64.StdEncoding.EncodeToString([]byte(secret)), base64.StdEncoding.EncodeToString([]byte("x"+secret+"y"))))
		}, func(c *Client) (contracts.TaskSnapshot, error) { return c.GetTask(context.Background(), "t-1", "") }},
		"JSON-RPC error": {func(w http.ResponseWriter, r *http.Request, m string) {
			rpcError(w, fmt.Sprintf(`{"code":-32602,"message":"bad params; you sent %s"}`, echo(r)))
		}, func(c *Client) (contracts.TaskSnapshot, error) {
			return c.SendMessage(context.Background(), contracts.OutboundMessage{MessageID: "m-1", Text: "hi"})
		}},
		// The cut at 1024 bytes came before the redaction: the first part
		// of a secret across it stayed.
		"across the error message's cut": {func(w http.ResponseWriter, r *http.Request, m string) {
			rpcError(w, fmt.Sprintf(`{"code":-32001,"message":"%s%s"}`, strings.Repeat("m", 1014), strings.TrimPrefix(echo(r), "Bearer ")))
		}, func(c *Client) (contracts.TaskSnapshot, error) { return c.GetTask(context.Background(), "t-1", "") }},
		"other encodings": {func(w http.ResponseWriter, r *http.Request, m string) {
			rpcResult(w, fmt.Sprintf(`{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"s-1","role":"ROLE_AGENT","parts":[{"text":"b64hdr=%s pct=%s upper=%s"}]}}}`,
				base64.StdEncoding.EncodeToString([]byte(echo(r))), strings.ReplaceAll(secret, "-", "%2D"), strings.ToUpper(secret)))
		}, func(c *Client) (contracts.TaskSnapshot, error) { return c.GetTask(context.Background(), "t-1", "") }},
		"HTTP error body": {func(w http.ResponseWriter, r *http.Request, m string) {
			http.Error(w, "upstream refused "+echo(r), http.StatusBadGateway)
		}, func(c *Client) (contracts.TaskSnapshot, error) { return c.GetTask(context.Background(), "t-1", "") }},
	} {
		opts := Options{MaxResponseBytes: 1 << 20}.WithCredential(nil, Secret{Bearer: secret})
		c := dialStubWith(t, stub{tc.reply}, "JSONRPC", "1.0", opts)
		snap, err := tc.call(c)
		text := fmt.Sprintf("%+v %v", snap, err)
		if leak := leaked(text, secret); leak != "" {
			t.Errorf("%s: the secret came back (%s): %s", name, leak, text)
		}
		if false {
			t.Errorf("%s: the secret came back: %s", name, text)
		}
		if !strings.Contains(text, Redacted) && !strings.Contains(string(snapRaw(snap)), Redacted) {
			t.Errorf("%s: nothing says what was redacted: %s", name, text)
		}
		var ce *CallError
		if err != nil && !errors.As(err, &ce) {
			t.Errorf("%s: error %T, want a *CallError still", name, err)
		}
	}
}

func snapRaw(s contracts.TaskSnapshot) []byte {
	var b []byte
	for _, a := range s.Artifacts {
		for _, p := range a.Parts {
			b = append(b, p.Raw...)
		}
	}
	return b
}

// leaked names the form of secret found in text, or "": whole, in any
// case, percent-encoded, base64 (alone or as a Bearer header value), or
// its first 10 bytes (a secret cut in two).
func leaked(text, secret string) string {
	lower := strings.ToLower(text)
	for name, form := range map[string]string{
		"as sent": secret, "percent-encoded": strings.ReplaceAll(secret, "-", "%2D"),
		"base64": base64.StdEncoding.EncodeToString([]byte(secret)), "base64 header": base64.StdEncoding.EncodeToString([]byte("Bearer " + secret)),
		"its first 10 bytes": secret[:10],
	} {
		if strings.Contains(lower, strings.ToLower(form)) {
			return name
		}
	}
	return ""
}

// Any secret makes a redactor: one with non-ASCII or invalid UTF-8 bytes
// and regexp metacharacters too (a pattern built from its bytes one by one
// panicked on a non-ASCII secret).
func TestRedactorTakesAnySecret(t *testing.T) {
	for _, s := range []string{"pässwörd-ß", "a.b*c(d)[e]", "bad\xffutf8"} {
		r := newRedactor([]string{s})
		if got := r.text("x " + s + " y"); strings.Contains(got, s) {
			t.Errorf("%q: %q", s, got)
		}
	}
}

// A secret an agent sends back spelled another way is found too: JSON's
// escapes ("\/" as PHP writes it, "\u0041") in an error body (the excerpt
// kept them: the whole secret in status and history), base64 with a
// prefix ("user:<secret>"), hex.
func TestEchoedSecretInOtherSpellings(t *testing.T) {
	const secret = "Zq8/Kx+Wv3-Tn_Lp7Ye"
	uni := ""
	for _, c := range secret {
		uni += fmt.Sprintf(`\u%04x`, c)
	}
	slash := strings.ReplaceAll(secret, "/", `\/`)
	for name, reply := range map[string]func(w http.ResponseWriter, r *http.Request, m string){
		"JSON-RPC error, escaped": func(w http.ResponseWriter, r *http.Request, m string) {
			rpcError(w, `{"code":-32001,"message":"not found; slash=`+slash+` uni=`+uni+`"}`)
		},
		"HTTP 400 JSON, escaped": func(w http.ResponseWriter, r *http.Request, m string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"slash":"`+slash+`","uni":"`+uni+`"}`)
		},
		"status text, encoded": func(w http.ResponseWriter, r *http.Request, m string) {
			rpcResult(w, fmt.Sprintf(`{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_FAILED","message":{"messageId":"s-1","role":"ROLE_AGENT","parts":[{"text":"p1=%s p2=%s hex=%s"}]}}}`,
				base64.StdEncoding.EncodeToString([]byte(":"+secret)), base64.StdEncoding.EncodeToString([]byte("ab"+secret)), hex.EncodeToString([]byte(secret))))
		},
	} {
		opts := Options{MaxResponseBytes: 1 << 20}.WithCredential(nil, Secret{Bearer: secret})
		c := dialStubWith(t, stub{reply}, "JSONRPC", "1.0", opts)
		snap, err := c.GetTask(context.Background(), "t-1", "")
		text := fmt.Sprintf("%+v %v", snap, err)
		for form, v := range map[string]string{"as sent": secret, `with \/`: slash, `\u`: uni[:30], "hex": hex.EncodeToString([]byte(secret)),
			"base64 after ':'": base64.StdEncoding.EncodeToString([]byte(":" + secret))[4:20], "base64 after 'ab'": base64.StdEncoding.EncodeToString([]byte("ab" + secret))[4:20]} {
			if strings.Contains(text, v) || strings.Contains(text, strings.ReplaceAll(v, `\`, `\\`)) {
				t.Errorf("%s: the secret came back %s: %s", name, form, text)
			}
		}
	}
}

// A secret too short to tell from ordinary text (under minRedacted bytes)
// is not looked for: "abc" would have been cut out of every reply.
func TestShortSecretIsNotLookedFor(t *testing.T) {
	if r := newRedactor([]string{"abc"}); r.text("abc and abcdef") != "abc and abcdef" {
		t.Errorf("a 3-byte secret changed ordinary text: %q", r.text("abc and abcdef"))
	}
}
