package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/temporal"
)

// ClusterService is one Temporal service of a cluster of separate
// processes (each its own host, as deployments run them): `delegate
// cluster-service` runs one from a JSON file of this shape. Every process of
// one cluster shares Postgres, Shards and Frontend; each has its own ports.
// Members find each other through the cluster_membership table of the
// store (ringpop), as they do in deployments with persisted membership.
type ClusterService struct {
	// Service is "frontend", "history", "matching" or "worker".
	Service string `json:"service"`
	// Postgres is the store, postgres://USER@HOST:PORT/DB (DB and
	// DB_visibility; PrepareCluster created them).
	Postgres string `json:"postgres"`
	// Shards is numHistoryShards: the same on every host of the cluster,
	// for its whole life.
	Shards int32 `json:"shards"`
	// GRPCPort and MembershipPort of this process on 127.0.0.1;
	// HTTPPort (frontend only) its HTTP API, 0 for none.
	GRPCPort       int `json:"grpc_port"`
	MembershipPort int `json:"membership_port"`
	HTTPPort       int `json:"http_port,omitempty"`
	// Others are the ports of one process of each other service: the
	// server's membership monitor tracks the services its config lists
	// (it finds every instance through membership; these ports are
	// only what the config says of a service it does not run).
	Others map[string]ClusterPorts `json:"others"`
	// Frontend is host:port of one frontend, the cluster's RPC address in
	// its cluster metadata (the same in every process).
	Frontend string `json:"frontend"`
	// LogLevel of the server's log (stderr); default "warn".
	LogLevel string `json:"log_level,omitempty"`
	// DynamicConfig: key → value, each applied without constraints.
	DynamicConfig map[string]any `json:"dynamic_config,omitempty"`
}

// ClusterPorts are a service process's ports on 127.0.0.1.
type ClusterPorts struct {
	GRPC       int `json:"grpc"`
	Membership int `json:"membership"`
	HTTP       int `json:"http,omitempty"`
}

// ClusterDynamicConfig is what every process of the test cluster runs
// with: one matching host, so one partition per task queue (forwarding
// between partitions on one host only adds latency; OneHostDynamicConfig).
var ClusterDynamicConfig = map[string]any{
	"matching.numTaskqueueReadPartitions":  1,
	"matching.numTaskqueueWritePartitions": 1,
}

// PrepareCluster readies the PostgreSQL store of a cluster before any of
// its services starts: the two databases and their schemas
// (setupPostgres), and namespace ns with its custom search attributes
// (prepareStore, which also clears the cluster members a previous cluster
// on this store recorded).
func PrepareCluster(postgres, ns string, attrs []string) error {
	store, vis, err := postgresConfigs(postgres)
	if err != nil {
		return err
	}
	if err := setupPostgres(store, vis); err != nil {
		return err
	}
	missing, err := prepareStore(store, ns, attrs)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("devserver: namespace %q exists without search attributes %v: give the cluster a new database", ns, missing)
	}
	return nil
}

// RunClusterService runs one service of a cluster until ctx is done, then
// stops it. Errors: a bad configuration, or the server failed to start.
func RunClusterService(ctx context.Context, cs ClusterService) error {
	switch cs.Service {
	case "frontend", "history", "matching", "worker":
	default:
		return fmt.Errorf("cluster-service: unknown service %q (frontend, history, matching or worker)", cs.Service)
	}
	if cs.Shards < 1 || cs.GRPCPort < 1 || cs.MembershipPort < 1 || cs.Frontend == "" {
		return errors.New("cluster-service: shards, grpc_port, membership_port and frontend are required")
	}
	if cs.LogLevel == "" {
		cs.LogLevel = "warn"
	}
	store, vis, err := postgresConfigs(cs.Postgres)
	if err != nil {
		return err
	}
	// Six processes share one PostgreSQL (max_connections 300 in
	// scripts/with-postgres.sh): fewer connections each than one server's.
	store.MaxConns, store.MaxIdleConns, vis.MaxConns, vis.MaxIdleConns = 10, 10, 5, 5
	rpc := config.RPC{GRPCPort: cs.GRPCPort, MembershipPort: cs.MembershipPort, BindOnIP: "127.0.0.1"}
	if cs.Service == "frontend" {
		rpc.HTTPPort = cs.HTTPPort
	}
	scfg := &config.Config{
		Global: config.Global{Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"}},
		Persistence: config.Persistence{
			DefaultStore: "default", VisibilityStore: "visibility", NumHistoryShards: cs.Shards,
			DataStores: map[string]config.DataStore{"default": {SQL: store}, "visibility": {SQL: vis}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace: false, FailoverVersionIncrement: 10,
			MasterClusterName: "active", CurrentClusterName: "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: cs.Frontend},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		// This process's service, and (below) the others it talks to,
		// found through membership (PublicClient left empty: the system
		// worker reaches the frontends it finds there).
		Services: map[string]config.Service{cs.Service: {RPC: rpc}},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
	}
	for name, p := range cs.Others {
		if name != cs.Service {
			scfg.Services[name] = config.Service{RPC: config.RPC{GRPCPort: p.GRPC, MembershipPort: p.Membership, HTTPPort: p.HTTP, BindOnIP: "127.0.0.1"}}
		}
	}
	dc := dynamicconfig.StaticClient{}
	for k, v := range cs.DynamicConfig {
		if f, ok := v.(float64); ok && f == float64(int(f)) {
			v = int(f) // a JSON number; the server's int settings refuse a float64
		}
		dc[dynamicconfig.MakeKey(k)] = []dynamicconfig.ConstrainedValue{{Value: v}}
	}
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: cs.LogLevel, Format: "console"}))
	srv, err := temporal.NewServer(
		temporal.WithConfig(scfg),
		temporal.ForServices([]string{cs.Service}),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dc),
	)
	if err != nil {
		return fmt.Errorf("cluster-service %s: %w", cs.Service, err)
	}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("cluster-service %s: starting: %w", cs.Service, err)
	}
	<-ctx.Done()
	return srv.Stop()
}

// ClusterAddr is 127.0.0.1:port.
func ClusterAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// FreePort is a free port on 127.0.0.1 in 20000-31999 (freePort), not
// handed out before by this process.
func FreePort() (int, error) { return freePort("127.0.0.1") }
