package deploy

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.temporal.io/server/common/config"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/devserver"
)

// loadCompose loads docker-compose.yml with every profile on and env as
// the environment it is interpolated with.
func loadCompose(t *testing.T, env map[string]string) *types.Project {
	t.Helper()
	var envs []string
	for k, v := range env {
		envs = append(envs, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{"../docker-compose.yml"}, cli.WithName("delegate"), cli.WithWorkingDirectory(".."),
		cli.WithProfiles([]string{"*"}), cli.WithEnv(envs))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return project
}

// environment is svc's environment, unset variables left out.
func environment(svc types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestComposeFile(t *testing.T) {
	project := loadCompose(t, nil)
	for _, name := range []string{"postgresql", "temporal-schema", "temporal", "temporal-setup", "temporal-ui", "worker", "webhook", "codec-server", "claims-agent"} {
		if _, ok := project.Services[name]; !ok {
			t.Errorf("service %q is missing", name)
		}
	}
	for name, svc := range project.Services {
		if strings.Contains(svc.Image, "auto-setup") {
			t.Errorf("%s runs %s: the auto-setup image is deprecated upstream", name, svc.Image)
		}
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
	// The order things start in.
	after := func(svc, dep, condition string) {
		t.Helper()
		if d, ok := project.Services[svc].DependsOn[dep]; !ok || d.Condition != condition {
			t.Errorf("%s should start after %s is %s (depends_on: %+v)", svc, dep, condition, project.Services[svc].DependsOn)
		}
	}
	after("temporal-schema", "postgresql", types.ServiceConditionHealthy)
	after("temporal", "temporal-schema", types.ServiceConditionCompletedSuccessfully)
	after("temporal-setup", "temporal", types.ServiceConditionHealthy)
	after("temporal-ui", "temporal-setup", types.ServiceConditionCompletedSuccessfully)
	after("worker", "temporal-setup", types.ServiceConditionCompletedSuccessfully)
	// The delegate services reach the server; the optional ones are in
	// their profiles.
	for name, profile := range map[string]string{"worker": "", "webhook": "push", "codec-server": "codec"} {
		svc := project.Services[name]
		if svc.Build == nil || svc.Build.Target != "worker" {
			t.Errorf("%s should run the worker image (build target worker)", name)
		}
		if profile == "" && len(svc.Profiles) > 0 || profile != "" && !slices.Equal(svc.Profiles, []string{profile}) {
			t.Errorf("%s: profiles %v, want %q", name, svc.Profiles, profile)
		}
		if name != "codec-server" && environment(svc)["TEMPORAL_ADDRESS"] != "temporal:7233" {
			t.Errorf("%s does not point at the server: TEMPORAL_ADDRESS %q", name, environment(svc)["TEMPORAL_ADDRESS"])
		}
		// The image's HEALTHCHECK asks a worker's endpoint: the worker
		// keeps it, the others turn it off.
		if off := svc.HealthCheck != nil && svc.HealthCheck.Disable; off != (name != "worker") {
			t.Errorf("%s: healthcheck disabled %v", name, off)
		}
	}
	ports := func(name string) []uint32 {
		var out []uint32
		for _, p := range project.Services[name].Ports {
			n, _ := strconv.Atoi(p.Published)
			if p.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q, not on loopback", name, p.Published, p.HostIP)
			}
			out = append(out, uint32(n))
		}
		return out
	}
	for svc, want := range map[string]uint32{"temporal": 7233, "temporal-ui": 8233, "codec-server": 8234, "claims-agent": 9999} {
		if !slices.Contains(ports(svc), want) {
			t.Errorf("%s does not publish %d (the port of delegate dev)", svc, want)
		}
	}
}

// The Temporal images are the server and UI versions go.mod builds the
// embedded server and UI from, the ones the tests run against.
func TestComposeVersionsFollowGoMod(t *testing.T) {
	server := goModVersion(t, "go.temporal.io/server")
	ui := goModVersion(t, "github.com/temporalio/ui-server/v2")
	project := loadCompose(t, nil)
	for svc, want := range map[string]string{
		"temporal":        "temporalio/server:" + server,
		"temporal-schema": "temporalio/admin-tools:" + server,
		"temporal-setup":  "temporalio/admin-tools:" + server,
		"temporal-ui":     "temporalio/ui:" + ui,
	} {
		if got := project.Services[svc].Image; got != want {
			t.Errorf("%s runs %s; go.mod builds %s (go.temporal.io/server v%s, github.com/temporalio/ui-server/v2 v%s)", svc, got, want, server, ui)
		}
	}
}

// checkSearchAttributes checks list, read as setup.sh reads
// DELEGATE_SEARCH_ATTRIBUTES, against contracts.SearchAttributeNames.
func checkSearchAttributes(t *testing.T, where, list string) {
	t.Helper()
	got := strings.Fields(list)
	for _, n := range contracts.SearchAttributeNames {
		if !slices.Contains(got, n) {
			t.Errorf("%s: search attribute %s (contracts.SearchAttributeNames) is not registered: add it to DELEGATE_SEARCH_ATTRIBUTES", where, n)
		}
	}
	for _, n := range got {
		if !slices.Contains(contracts.SearchAttributeNames, n) {
			t.Errorf("%s: registers %s, which is not in contracts.SearchAttributeNames", where, n)
		}
	}
}

// Every search attribute the workflow sets is registered, as Keyword, by
// the setup service, which runs deploy/temporal/setup.sh.
func TestComposeSearchAttributes(t *testing.T) {
	project := loadCompose(t, nil)
	setup := project.Services["temporal-setup"]
	checkSearchAttributes(t, "docker-compose.yml temporal-setup", environment(setup)["DELEGATE_SEARCH_ATTRIBUTES"])
	if !slices.Equal(setup.Entrypoint, []string{"sh", "/etc/delegate-setup/setup.sh"}) {
		t.Errorf("temporal-setup runs %v, not deploy/temporal/setup.sh", setup.Entrypoint)
	}
	script, err := os.ReadFile("temporal/setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`names="${DELEGATE_SEARCH_ATTRIBUTES:?`, `for name in $names; do`,
		`temporal operator search-attribute create -n "$ns" --name "$name" --type Keyword`, `temporal operator namespace create -n "$ns"`} {
		if !strings.Contains(string(script), want) {
			t.Errorf("deploy/temporal/setup.sh lacks %q", want)
		}
	}
	mounted := false
	for _, v := range setup.Volumes {
		mounted = mounted || v.Source == filepath.Join(project.WorkingDir, "deploy/temporal") && v.Target == "/etc/delegate-setup"
	}
	if !mounted {
		t.Errorf("temporal-setup does not mount deploy/temporal at /etc/delegate-setup: %+v", setup.Volumes)
	}
}

// The server reads its configuration from the environment through its
// embedded template (go.temporal.io/server/common/config at the version of
// go.mod, the one the image runs): loaded with the compose environment, it
// is PostgreSQL for both stores and the mounted dynamic config, and every
// variable given is one the template reads.
func TestComposeServerConfig(t *testing.T) {
	project := loadCompose(t, nil)
	svc := project.Services["temporal"]
	env := environment(svc)
	tmpl, err := os.ReadFile(filepath.Join(moduleDir(t, "go.temporal.io/server"), "common/config/config_template_embedded.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys(env) {
		if !strings.Contains(string(tmpl), `(env "`+k+`")`) {
			t.Errorf("temporal: %s is not read by the server's config template", k)
		}
	}
	for _, k := range keys(env) {
		t.Setenv(k, env[k])
	}
	// The file named must be mounted: read it through the mount.
	dcPath := env["DYNAMIC_CONFIG_FILE_PATH"]
	local := ""
	for _, v := range svc.Volumes {
		if rel, ok := strings.CutPrefix(dcPath, v.Target+"/"); ok {
			local = filepath.Join(v.Source, rel)
		}
	}
	if local == "" {
		t.Fatalf("temporal: DYNAMIC_CONFIG_FILE_PATH %s is in no volume", dcPath)
	}
	if _, err := devserver.LoadDynamicConfig(local); err != nil {
		t.Errorf("temporal: dynamic config %s: %v", local, err)
	}
	cfg, err := config.Load(config.WithEmbedded())
	if err != nil {
		t.Fatalf("the server's embedded config with the compose environment: %v", err)
	}
	p := cfg.Persistence
	for store, db := range map[string]string{p.DefaultStore: "temporal", p.VisibilityStore: "temporal_visibility"} {
		sql := p.DataStores[store].SQL
		if sql == nil || sql.PluginName != "postgres12" || sql.ConnectAddr != "postgresql:5432" || sql.DatabaseName != db || sql.User != "temporal" {
			t.Errorf("store %s: %+v, want postgres12 at postgresql:5432, database %s", store, sql, db)
		}
	}
	if cfg.DynamicConfigClient == nil || cfg.DynamicConfigClient.Filepath != dcPath {
		t.Errorf("dynamic config client: %+v, want %s", cfg.DynamicConfigClient, dcPath)
	}
	if fe := cfg.Services["frontend"].RPC; fe.GRPCPort != 7233 || fe.BindOnIP != "0.0.0.0" {
		t.Errorf("frontend: %+v, want 0.0.0.0:7233", fe)
	}
}

// The schema service runs temporal-sql-tool with its own environment on
// both stores, with schemas the server module ships.
func TestComposeSchema(t *testing.T) {
	project := loadCompose(t, nil)
	svc := project.Services["temporal-schema"]
	if !slices.Equal(svc.Entrypoint, []string{"sh", "/etc/delegate-setup/setup-schema.sh"}) {
		t.Errorf("temporal-schema runs %v, not deploy/temporal/setup-schema.sh", svc.Entrypoint)
	}
	mod := moduleDir(t, "go.temporal.io/server")
	tool, err := os.ReadFile(filepath.Join(mod, "tools/sql/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys(environment(svc)) {
		if !strings.Contains(string(tool), `EnvVar: "`+k+`"`) {
			t.Errorf("temporal-schema: temporal-sql-tool reads no %s", k)
		}
	}
	if environment(svc)["SQL_PLUGIN"] != "postgres12" || environment(svc)["SQL_HOST"] != "postgresql" {
		t.Errorf("temporal-schema: %v", environment(svc))
	}
	script, err := os.ReadFile("temporal/setup-schema.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"temporal:${DBNAME:-temporal}" "visibility:${VISIBILITY_DBNAME:-temporal_visibility}"`, `schema="postgresql/v12/${store%%:*}"`,
		`temporal-sql-tool --db "$db" create`, `temporal-sql-tool --db "$db" setup-schema -v 0.0`, `temporal-sql-tool --db "$db" update-schema --schema-name "$schema"`} {
		if !strings.Contains(string(script), want) {
			t.Errorf("deploy/temporal/setup-schema.sh lacks %q", want)
		}
	}
	for _, s := range []string{"temporal", "visibility"} {
		if _, err := os.Stat(filepath.Join(mod, "schema/postgresql/v12", s, "versioned")); err != nil {
			t.Errorf("schema postgresql/v12/%s: %v", s, err)
		}
	}
}

// The dynamic config is the one `delegate dev` runs its single host with.
func TestComposeDynamicConfig(t *testing.T) {
	dc, err := devserver.LoadDynamicConfig("temporal/dynamicconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for k, v := range dc {
		if len(v) != 1 {
			t.Errorf("%s: %d values, want one without constraints", k, len(v))
			continue
		}
		got[strings.ToLower(k.String())] = v[0].Value
	}
	want := map[string]any{}
	for k, v := range devserver.OneHostDynamicConfig {
		want[strings.ToLower(k)] = v
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/temporal/dynamicconfig.yaml: %v; devserver.OneHostDynamicConfig: %v", got, want)
	}
}

// The UI reads every variable given, and shows decoded payloads through
// the codec server exactly when keys are set.
func TestComposeUI(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join(moduleDir(t, "github.com/temporalio/ui-server/v2"), "config/docker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := environment(loadCompose(t, nil).Services["temporal-ui"])
	for _, k := range keys(env) {
		if !strings.Contains(string(tmpl), `env "`+k+`"`) {
			t.Errorf("temporal-ui: %s is not read by the UI's config (config/docker.yaml)", k)
		}
	}
	if env["TEMPORAL_CODEC_ENDPOINT"] != "" {
		t.Errorf("without keys, the UI has codec endpoint %q", env["TEMPORAL_CODEC_ENDPOINT"])
	}
	withKeys := loadCompose(t, map[string]string{"DELEGATE_ENCRYPTION_KEYS": "k1:AAAA"})
	if got := environment(withKeys.Services["temporal-ui"])["TEMPORAL_CODEC_ENDPOINT"]; got != "http://127.0.0.1:8234" {
		t.Errorf("with keys, the UI's codec endpoint is %q, want the codec server's published port", got)
	}
	if got := environment(withKeys.Services["worker"])["DELEGATE_ENCRYPTION_KEYS"]; got != "k1:AAAA" {
		t.Errorf("with keys, the worker has %q", got)
	}
	withPush := loadCompose(t, map[string]string{"DELEGATE_PUSH_KEY": "a2V5"})
	if got := environment(withPush.Services["worker"])["DELEGATE_PUSH_URL"]; got != "http://webhook:8235" {
		t.Errorf("with a push key, the worker's push URL is %q", got)
	}
	if got := environment(loadCompose(t, nil).Services["worker"])["DELEGATE_PUSH_URL"]; got != "" {
		t.Errorf("without a push key, the worker's push URL is %q", got)
	}
}

// The commands and flags the delegate services run exist in the worker
// build, and read the variables given them.
func TestComposeCommands(t *testing.T) {
	project := loadCompose(t, nil)
	for _, name := range []string{"worker", "webhook", "codec-server"} {
		svc := project.Services[name]
		checkCommand(t, "docker-compose.yml "+name, svc.Command, keys(environment(svc)))
	}
	if p := project.Services["webhook"].Command; !slices.Contains(p, "http://webhook:8235") {
		t.Errorf("the webhook's public URL is not the worker's push URL: %v", p)
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
