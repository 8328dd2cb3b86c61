package deploy

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/testutil"
)

// freePort is a port free on 127.0.0.1 now, below the kernel's ephemeral
// range: Temporal stores membership ports as a PostgreSQL smallint, so a
// port above 32767 fails its start.
func freePort(t *testing.T) string {
	t.Helper()
	for range 200 {
		p := strconv.Itoa(20000 + rand.IntN(12000))
		if ln, err := net.Listen("tcp", "127.0.0.1:"+p); err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free port below 32000")
	return ""
}

// The Temporal part of docker-compose.yml, without Docker, on the
// PostgreSQL of `make test-postgres`: deploy/temporal/setup-schema.sh with
// temporal-sql-tool (built from go.temporal.io/server at go.mod's version,
// the program of the admin-tools image), twice; the server with the
// environment of the temporal service, loaded through its embedded config
// template and reading the mounted dynamic config file, as the server image
// does (ports and the database moved to where this test has them); the
// namespace and the search attributes setup.sh registers (here through the
// operator API: the temporal CLI is not built here); then the worker build
// with the worker service's environment polls it (delegate health) and
// lists through its visibility store.
func TestPostgresComposeTemporal(t *testing.T) {
	pg, err := url.Parse(testutil.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	project := loadCompose(t, nil)
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	dbs := map[string]string{"DBNAME": "compose_" + suffix, "VISIBILITY_DBNAME": "compose_" + suffix + "_visibility"}

	// The schema, as the temporal-schema service sets it up.
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "temporal-sql-tool"), "go.temporal.io/server/cmd/tools/sql")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building temporal-sql-tool: %v\n%s", err, out)
	}
	schemaEnv := environment(project.Services["temporal-schema"])
	schemaEnv["SQL_HOST"], schemaEnv["SQL_PORT"], schemaEnv["SQL_PASSWORD"] = pg.Hostname(), pg.Port(), ""
	schemaEnv["SQL_USER"] = pg.User.Username()
	for k, v := range dbs {
		schemaEnv[k] = v
	}
	for run := 1; run <= 2; run++ {
		cmd := exec.CommandContext(ctx, "sh", "temporal/setup-schema.sh")
		cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		for k, v := range schemaEnv {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("setup-schema.sh, run %d: %v\n%s", run, err, out)
		}
		for _, db := range dbs {
			if !strings.Contains(string(out), "database "+db+": schema") {
				t.Errorf("setup-schema.sh, run %d: %s not set up:\n%s", run, db, out)
			}
		}
	}

	// The server, with the temporal service's environment.
	svc := project.Services["temporal"]
	env := environment(svc)
	env["POSTGRES_SEEDS"], env["DB_PORT"], env["POSTGRES_USER"], env["POSTGRES_PWD"] = pg.Hostname(), pg.Port(), pg.User.Username(), ""
	env["BIND_ON_IP"] = "127.0.0.1"
	env["LOG_LEVEL"] = "error"
	for _, k := range []string{"FRONTEND_GRPC_PORT", "FRONTEND_MEMBERSHIP_PORT", "FRONTEND_HTTP_PORT", "HISTORY_GRPC_PORT", "HISTORY_MEMBERSHIP_PORT",
		"MATCHING_GRPC_PORT", "MATCHING_MEMBERSHIP_PORT", "WORKER_GRPC_PORT", "WORKER_MEMBERSHIP_PORT"} {
		env[k] = freePort(t)
	}
	for k, v := range dbs {
		env[k] = v
	}
	for _, v := range svc.Volumes {
		if rel, ok := strings.CutPrefix(env["DYNAMIC_CONFIG_FILE_PATH"], v.Target+"/"); ok {
			env["DYNAMIC_CONFIG_FILE_PATH"] = filepath.Join(v.Source, rel)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := config.Load(config.WithEmbedded())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := temporal.NewServer(temporal.ForServices(temporal.DefaultServices), temporal.WithConfig(cfg),
		temporal.WithLogger(log.NewZapLogger(log.BuildZapLogger(cfg.Log))))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatalf("the server with the compose environment: %v", err)
	}
	defer func() { _ = srv.Stop() }()
	frontend := "127.0.0.1:" + env["FRONTEND_GRPC_PORT"]

	// What setup.sh does with the temporal CLI.
	setup := environment(project.Services["temporal-setup"])
	ns := setup["TEMPORAL_NAMESPACE"]
	c, err := client.DialContext(ctx, client.Options{HostPort: frontend, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(72 * time.Hour)})
		var exists *serviceerror.NamespaceAlreadyExists
		if err == nil || errors.As(err, &exists) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("registering namespace %s: %v", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, n := range strings.Fields(setup["DELEGATE_SEARCH_ATTRIBUTES"]) {
		attrs[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	for {
		_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: attrs})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("registering the search attributes: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The worker build, with the worker service's environment.
	workerEnv := environment(project.Services["worker"])
	workerEnv["TEMPORAL_ADDRESS"] = frontend
	workerEnv["DELEGATE_TRUST"] = "trust.json"
	health := "127.0.0.1:" + freePort(t)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	worker := exec.CommandContext(wctx, workerBinary(t), append(project.Services["worker"].Command, "--health-addr", health)...)
	worker.Env = []string{"HOME=" + t.TempDir(), "TEMPORAL_CONFIG_FILE=" + emptyFile(t)}
	for k, v := range workerEnv {
		worker.Env = append(worker.Env, k+"="+v)
	}
	var wout testutil.LockedBuffer
	worker.Stdout, worker.Stderr = &wout, &wout
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { wcancel(); _ = worker.Wait() }()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "compose-probe", TaskQueue: contracts.TaskQueue, WorkflowRunTimeout: time.Minute}, "NoSuchWorkflow"); err != nil {
		t.Fatal(err)
	}
	for {
		out, code := runWorkerBinary(t, "health", "--addr", health)
		if code == 0 && strings.Contains(out, "last poll completed") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the worker does not poll the compose server: %s; worker: %s", out, wout.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range contracts.SearchAttributeNames {
		if resp.GetCustomAttributes()[n] != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s: %v, want Keyword", n, resp.GetCustomAttributes()[n])
		}
	}
	list := exec.CommandContext(ctx, workerBinary(t), "list", "--address", frontend, "--namespace", ns)
	list.Env = []string{"HOME=" + t.TempDir(), "TEMPORAL_CONFIG_FILE=" + emptyFile(t)}
	if out, err := list.CombinedOutput(); err != nil {
		t.Errorf("delegate list on the compose server: %v\n%s", err, out)
	}
}
