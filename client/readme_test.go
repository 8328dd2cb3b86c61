package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlocks returns the Go code blocks of the section of a Markdown
// document headed "## "+section.
func goBlocks(t *testing.T, doc, section string) []string {
	t.Helper()
	_, body, ok := strings.Cut(doc, "\n## "+section+"\n")
	if !ok {
		t.Fatalf("no section %q", section)
	}
	body, _, _ = strings.Cut(body, "\n## ")
	var out []string
	for _, m := range regexp.MustCompile("(?s)\n```go\n(.*?)\n```\n").FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReadmeGoSnippet builds the Go snippets of README.md's "Backend
// developer's guide" and docs/backends.md's "Go" the way the README tells
// a Go backend to depend on this module: a new module, a replace of
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
	backends, err := os.ReadFile("../docs/backends.md")
	if err != nil {
		t.Fatal(err)
	}
	// Each block is a file without its package clause.
	snippets := map[string]string{}
	for file, blocks := range map[string][]string{
		"readme.go":   goBlocks(t, string(readme), "Backend developer's guide"),
		"backends.go": goBlocks(t, string(backends), "Go"),
	} {
		if len(blocks) != 1 {
			t.Fatalf("%s: %d Go code blocks, want 1", file, len(blocks))
		}
		snippets[file] = blocks[0]
	}
	for file, snippet := range snippets {
		for _, stale := range []string{", _ :=", ", _ =", "_ = h.", "_, _ ="} {
			if strings.Contains(snippet, stale) {
				t.Errorf("%s: the snippet drops an error: %q", file, stale)
			}
		}
		// A set field wins over TEMPORAL_ADDRESS and the profile: a
		// snippet that sets Address connects a user who exported
		// TEMPORAL_ADDRESS (as the tour suggests) to the wrong server.
		if m := regexp.MustCompile(`Connection\{[^}]*Address:`).FindString(snippet); m != "" {
			t.Errorf("%s: the snippet hard-codes the address (%q): use client.Connection{}", file, m)
		}
	}
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for file, snippet := range snippets {
		// One package per snippet: each may name its functions freely.
		sub := filepath.Join(dir, strings.TrimSuffix(file, ".go"))
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, file), []byte("package backend\n\n"+snippet+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
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
		// As README.md says, with this checkout for PATH.
		{"mod", "edit", "-replace", "github.com/a2adelegate/delegate=" + checkout},
		{"mod", "edit", "-require", "github.com/a2adelegate/delegate@v0.0.0-00010101000000-000000000000"},
		{"mod", "tidy"},
		{"build", "./..."},
		{"vet", "./..."},
	} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
