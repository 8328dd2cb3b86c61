package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doc.go names every file of the package (one file per concern): a file
// added or renamed without it is caught here.
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
}
