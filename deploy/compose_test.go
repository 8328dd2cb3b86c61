package deploy

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

func TestComposeFile(t *testing.T) {
	opts, err := cli.NewProjectOptions([]string{"../docker-compose.yml"}, cli.WithName("delegate"), cli.WithWorkingDirectory(".."))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	for _, name := range []string{"postgresql", "temporal", "search-attributes", "temporal-ui", "worker", "claims-agent"} {
		if _, ok := project.Services[name]; !ok {
			t.Errorf("service %q is missing", name)
		}
	}
	for name, svc := range project.Services {
		if svc.Build != nil {
			if !strings.HasSuffix(svc.Image, ":dev") {
				t.Errorf("%s builds from the Dockerfile; its image %q should be tagged", name, svc.Image)
			}
			continue
		}
		_, tag, ok := strings.Cut(svc.Image, ":")
		if !ok || tag == "" || tag == "latest" {
			t.Errorf("%s: image %q is not pinned by tag", name, svc.Image)
		}
	}
	w := project.Services["worker"]
	cmd := strings.Join(w.Command, " ")
	if !strings.Contains(cmd, "--address temporal:7233") || *w.Environment["TEMPORAL_ADDRESS"] != "temporal:7233" {
		t.Errorf("the worker does not point at the server: command %q", cmd)
	}
	if _, ok := w.DependsOn["search-attributes"]; !ok {
		t.Errorf("the worker should start after the search attributes are registered")
	}
	sa := strings.Join(project.Services["search-attributes"].Command, " ")
	for _, name := range []string{"A2AState", "A2AAgent", "A2ARemoteTaskId", "A2APurpose"} {
		if !strings.Contains(sa, name) {
			t.Errorf("search attribute %s is not registered at start", name)
		}
	}
	ports := func(name string) []uint32 {
		var out []uint32
		for _, p := range project.Services[name].Ports {
			n, _ := strconv.Atoi(p.Published)
			out = append(out, uint32(n))
		}
		return out
	}
	for svc, want := range map[string]uint32{"temporal": 7233, "temporal-ui": 8233, "claims-agent": 9999} {
		if !slices.Contains(ports(svc), want) {
			t.Errorf("%s does not publish %d (the port of delegate dev)", svc, want)
		}
	}
}

// The files the compose setup mounts and uses are valid.
func TestComposeInputs(t *testing.T) {
	if _, err := cards.LoadTrustStore("trust.json"); err != nil {
		t.Errorf("deploy/trust.json: %v", err)
	}
	raw, err := os.ReadFile("lost-parcel.compose.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := contracts.DecodeDelegation(raw, mustTime("2026-11-29T00:00:00Z")); err != nil {
		t.Errorf("deploy/lost-parcel.compose.json: %v", err)
	}
}
