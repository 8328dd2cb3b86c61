package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every example contract is valid, names a scenario the claims agent has,
// and is linked from docs/claims-agent.md; every scenario has an example
// and a row there.
func TestExamplesMatchScenariosAndDocs(t *testing.T) {
	doc := readDoc(t, "docs/claims-agent.md")
	files, err := filepath.Glob("../../contracts/examples/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	known := map[string]bool{}
	for _, s := range claimsagent.Scenarios {
		known[s.Name] = true
		if _, err := os.Stat("../../contracts/examples/" + s.Name + ".json"); err != nil {
			t.Errorf("scenario %q has no contracts/examples/%s.json", s.Name, s.Name)
		}
		if !strings.Contains(doc, "| `"+s.Name+"`") {
			t.Errorf("docs/claims-agent.md has no row for scenario %q", s.Name)
		}
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name == "demo-credentials.json" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := contracts.DecodeDelegation(b, time.Now())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var data struct {
			Scenario string `json:"scenario"`
		}
		_ = json.Unmarshal(d.Message.Data, &data)
		if data.Scenario != "" && !known[data.Scenario] {
			t.Errorf("%s: scenario %q is not one of the claims agent's", name, data.Scenario)
		}
		if !strings.Contains(doc, "(../contracts/examples/"+name+")") {
			t.Errorf("docs/claims-agent.md does not link %s", name)
		}
	}
}

// docs/contracts.md's field table has a row for every field of a contract.
func TestContractFieldsDocumented(t *testing.T) {
	doc := readDoc(t, "docs/contracts.md")
	typ := reflect.TypeFor[contracts.Delegation]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !strings.Contains(doc, "| `"+name+"` |") {
			t.Errorf("docs/contracts.md has no row for field %q", name)
		}
	}
}

// A long poll the server ended early is polled again; a refusal is not.
func TestRetryablePoll(t *testing.T) {
	if !retryablePoll(status.Error(codes.Canceled, "stream terminated by RST_STREAM with error code: CANCEL")) {
		t.Error("RST_STREAM CANCEL: not retried")
	}
	if retryablePoll(status.Error(codes.NotFound, "workflow not found")) || retryablePoll(errors.New("other")) {
		t.Error("a refusal is retried")
	}
}
