package push

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/a2adelegate/delegate/codec"
)

// EnvKey is the environment variable that holds the push key (base64 of
// at least 32 random bytes).
const EnvKey = "DELEGATE_PUSH_KEY"

// Settings are what the worker and the webhook share: the webhook's
// public URL (as agents reach it) and the key tokens are derived with.
type Settings struct {
	PublicURL string
	Key       []byte
}

// NewSettings checks publicURL (absolute http or https) and key (at least
// 32 bytes).
func NewSettings(publicURL string, key []byte) (*Settings, error) {
	u, err := url.Parse(publicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("push public URL %q: an absolute http(s) URL", publicURL)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("push key: %d bytes, at least 32", len(key))
	}
	return &Settings{PublicURL: strings.TrimSuffix(publicURL, "/"), Key: key}, nil
}

// LoadKey reads a push key: the base64 text of path, or of $DELEGATE_PUSH_KEY
// when path is empty; nil when neither is set. Errors name the source,
// never the key.
func LoadKey(path string) ([]byte, error) {
	text, from := os.Getenv(EnvKey), EnvKey
	if path != "" {
		b, err := codec.ReadSecretFile(path)
		if err != nil {
			return nil, fmt.Errorf("push key file: %w", err)
		}
		text, from = string(b), path
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	k, err := codec.DecodeBase64(text)
	if err != nil {
		return nil, errors.New("push key (" + from + "): not base64")
	}
	if len(k) < 32 {
		return nil, fmt.Errorf("push key (%s): %d bytes, at least 32", from, len(k))
	}
	return k, nil
}

// URL is the notification URL of one delegation: the public URL, the
// workflow id (path-escaped) and the agent's origin (query "agent"), so
// that the webhook knows whose signature to expect.
func (s *Settings) URL(workflowID, agentOrigin string) string {
	return s.PublicURL + "/" + url.PathEscape(workflowID) + "?agent=" + url.QueryEscape(agentOrigin)
}

// Token is the token registered for one delegation's task at one agent.
func (s *Settings) Token(workflowID, taskID, agentOrigin string) string {
	return Token(s.Key, workflowID, taskID, agentOrigin)
}

// Token derives the token of workflowID's task taskID at agentOrigin with
// key: base64url(HMAC-SHA256(key, "delegate-push" 0 workflowID 0 taskID 0
// agentOrigin)). It opens that one delegation's one task, from that agent
// only.
func Token(key []byte, workflowID, taskID, agentOrigin string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("delegate-push\x00" + workflowID + "\x00" + taskID + "\x00" + agentOrigin))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
