package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// doc.go names every file of the package (one file per concern), and only
// files it has: a file added, renamed or removed without it is caught here.
func TestDocNamesEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
			continue
		}
		if !strings.Contains(string(doc), f) {
			t.Errorf("doc.go does not name %s", f)
		}
	}
	// And every file it names exists: a file renamed or removed leaves no
	// stale name behind.
	named := regexp.MustCompile(`\b[a-z0-9_]+\.go\b`).FindAllString(string(doc), -1)
	if len(named) == 0 {
		t.Fatal("doc.go names no file")
	}
	for _, f := range named {
		if !slices.Contains(files, f) {
			t.Errorf("doc.go names %s, which is not a file of the package", f)
		}
	}
}
