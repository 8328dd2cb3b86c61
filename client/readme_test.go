package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeGoSnippet returns the Go code block of README.md's "Backend
// developer's guide".
func readmeGoSnippet(t *testing.T, readme string) string {
	t.Helper()
	_, guide, ok := strings.Cut(readme, "\n## Backend developer's guide\n")
	if !ok {
		t.Fatal(`README.md has no section "Backend developer's guide"`)
	}
	guide, _, _ = strings.Cut(guide, "\n## ")
	blocks := regexp.MustCompile("(?s)\n```go\n(.*?)\n```\n").FindAllStringSubmatch(guide, -1)
	if len(blocks) != 1 {
		t.Fatalf("the Backend developer's guide has %d Go code blocks, want 1", len(blocks))
	}
	return blocks[0][1]
}

// TestReadmeGoSnippet builds the README's Go snippet the way the README
// tells a Go backend to depend on this module: a new module, a replace of
// github.com/a2adelegate/delegate by this checkout and a require of its
// zero pseudo-version, go mod tidy; then go build and go vet. The
// checkout's go.sum seeds the new module's (the public checksum database
// may be out of reach where the tests run).
func TestReadmeGoSnippet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet := readmeGoSnippet(t, string(readme))
	for _, stale := range []string{"c, _ :=", ", _ := client.", "_ = h."} {
		if strings.Contains(snippet, stale) {
			t.Errorf("the snippet drops an error: %q", stale)
		}
	}
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "backend.go"), []byte("package backend\n\n"+snippet+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	for _, args := range [][]string{
		{"mod", "init", "example.com/backend"},
		// As README.md says, with this checkout for ../delegate.
		{"mod", "edit", "-replace", "github.com/a2adelegate/delegate=" + checkout},
		{"mod", "edit", "-require", "github.com/a2adelegate/delegate@v0.0.0-00010101000000-000000000000"},
		{"mod", "tidy"},
		{"build", "./..."},
		{"vet", "./..."},
	} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s\nthe snippet:\n%s", strings.Join(args, " "), err, out, snippet)
		}
	}
}
