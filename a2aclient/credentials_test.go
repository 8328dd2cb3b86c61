package a2aclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loadStore(t *testing.T, doc string) (*Credentials, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadCredentials(path)
}

// A ref is bound to the origins it may be sent to; a store whose ref names
// none is refused, and a ref asked for by another origin is not handed out.
func TestRefsAreBoundToOrigins(t *testing.T) {
	if _, err := loadStore(t, `{"refs": {"claims-prod": {"bearer": "s3cret"}}}`); err == nil || !strings.Contains(err.Error(), `refs["claims-prod"].origins`) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("ref without origins: %v, want an error naming refs[\"claims-prod\"].origins (without the secret)", err)
	}
	c, err := loadStore(t, `{"refs": {"claims-prod": {"bearer": "s3cret", "origins": ["https://Claims.example:443/x"]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.ForRef("claims-prod", "https://claims.example"); err != nil || s.Bearer != "s3cret" {
		t.Errorf("ForRef(bound origin) = %v, %v", s, err)
	}
	_, err = c.ForRef("claims-prod", "https://evil.example")
	if !errors.Is(err, ErrRefNotAllowed) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("ForRef(other origin) error = %v, want ErrRefNotAllowed without the secret", err)
	}
	if _, err := c.ForRef("nope", "https://claims.example"); !errors.Is(err, ErrRefUnknown) {
		t.Errorf("ForRef(unknown) error = %v, want ErrRefUnknown", err)
	}
}
