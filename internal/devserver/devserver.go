package devserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/temporal"
)

// Config configures the embedded server.
type Config struct {
	// DBPath is the SQLite file (created with its schema when missing).
	// Ignored when Memory or Postgres is set. Default ".delegate/temporal.db".
	DBPath string
	// Postgres, postgres://USER[:PASSWORD]@HOST:PORT/DB, runs the server on
	// PostgreSQL instead of SQLite: database DB and DB_visibility, created
	// when missing, their schemas set up and updated with the server's own
	// SQL schema tool (see setupPostgres).
	Postgres string
	// Memory keeps everything in memory; lost at Stop.
	Memory bool
	// CodecEndpoint, when set, is the codec server the UI sends payloads
	// to, to show them decoded (package codec; `delegate dev` with
	// encryption keys starts one).
	CodecEndpoint string
	// IP to listen on; default 127.0.0.1.
	IP string
	// Port of the frontend (gRPC); 0 picks a free port.
	Port int
	// UIPort of the Temporal UI; 0 picks a free port; -1 disables the UI.
	UIPort int
	// HTTPPort of the frontend's HTTP API, which Nexus needs: the server
	// delivers an asynchronous operation's completion to the caller's
	// workflow through it (the callback "temporal://system" of an
	// endpoint with a worker target). 0 picks a free port at each start
	// (in 20000-31999, like the internal ports).
	HTTPPort int
	// Namespace to create; default "default".
	Namespace string
	// SearchAttributes are custom Keyword search attributes to register.
	SearchAttributes []string
	// LogLevel of the server's own log (to stderr); default "error".
	LogLevel string
	// DynamicConfig overrides OneHostDynamicConfig key by key (Temporal's
	// dynamic config; see LoadDynamicConfig for a YAML file).
	DynamicConfig dynamicconfig.ConfigValueMap
	// TLS, when set, makes the frontend accept TLS only (mutual TLS with
	// RequireClientAuth); the server's own clients (its system worker,
	// the namespace and search-attribute setup) connect with ClientCert.
	// The UI is not supported with TLS (set UIPort -1).
	TLS *TLS
}

// TLS is the frontend's TLS (Temporal server config.RootTLS.Frontend):
// PEM files.
type TLS struct {
	CertFile, KeyFile string // the server certificate
	CAFile            string // trusted for client certificates, and by the server's own clients
	// RequireClientAuth: clients must present a certificate CAFile signed
	// (mutual TLS).
	RequireClientAuth bool
	// ClientCertFile and ClientKeyFile are what the server's own clients
	// present (required with RequireClientAuth).
	ClientCertFile, ClientKeyFile string
}

// OneHostDynamicConfig is the dynamic config every embedded server runs
// with: settings chosen for one host with one history shard, each measured
// in docs/performance.md. Server defaults are sized for clusters with many
// shards and hosts; on one host they cost latency and nothing else.
//
//   - history.transferProcessorMaxPollRPS (default 20): how often a shard's
//     transfer queue is read. With one shard, every workflow task that is
//     not dispatched eagerly waited up to 50 ms for it.
//   - history.timerProcessorMaxPollRPS (default 20): the same for the
//     timer queue (a delegation's first read and its deadline are timers).
//   - history.visibilityProcessorMaxPollRPS (default 20): how often the
//     visibility queue (what list and the UI show) is read: 5 a second, so
//     list and the UI show a change at most 200 ms late. The server skips
//     a start or upsert record of a workflow that has closed by the time
//     the record is read (go.temporal.io/server's visibility queue task
//     executor), so reading in batches leaves out the records a short
//     workflow would write and then overwrite at once; on SQLite each
//     costs about 6 to 9 core-ms (docs/performance.md).
//   - matching.numTaskqueueReadPartitions and
//     matching.numTaskqueueWritePartitions (default 4): partitions spread
//     a task queue over matching hosts; with one host, a task written to
//     one partition and polled on another waits for forwarding (the
//     multi-second p95 stalls at concurrency 50).
//
// system.forceSearchAttributesCacheRefreshOnRead is on only for a run that
// registers search attributes after its start (see dynamicConfig).
var OneHostDynamicConfig = map[string]any{
	"history.transferProcessorMaxPollRPS":   1000,
	"history.timerProcessorMaxPollRPS":      1000,
	"history.visibilityProcessorMaxPollRPS": 5,
	"matching.numTaskqueueReadPartitions":   1,
	"matching.numTaskqueueWritePartitions":  1,
}

// LoadDynamicConfig reads a file in Temporal's dynamic-config YAML format
// (go.temporal.io/server/common/dynamicconfig: key: [{value: V,
// constraints: {...}}]). A key the server does not know, or a value its
// setting refuses, is an error naming the key: a typo would otherwise be
// ignored. The file is read once; a change applies at the next start.
func LoadDynamicConfig(path string) (dynamicconfig.ConfigValueMap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--dynamic-config: %w", err)
	}
	fail := func(err error) (dynamicconfig.ConfigValueMap, error) {
		return nil, fmt.Errorf("--dynamic-config %s: %w", path, err)
	}
	// The shape first, with the keys as written (the server's loader
	// lowercases them and names no key for a value of the wrong shape).
	var top map[string]any
	if err := yaml.Unmarshal(b, &top); err != nil {
		var list []any
		if yaml.Unmarshal(b, &list) == nil {
			return fail(errors.New("want a map of setting names to lists of {value: V, constraints: {...}}, not a list"))
		}
		return fail(err)
	}
	written := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		// The server lowercases keys: two spellings of one key would
		// leave which value applies to chance.
		if other, ok := written[strings.ToLower(k)]; ok {
			return fail(fmt.Errorf("%q and %q are the same setting (keys are case-insensitive): give it once", other, k))
		}
		written[strings.ToLower(k)] = k
		list, ok := top[k].([]any)
		if !ok {
			return fail(fmt.Errorf("%s: want a list of {value: V} (for example \"%s:\\n  - value: 500\"), got %v", k, k, top[k]))
		}
		if len(list) == 0 {
			return fail(fmt.Errorf("%s: an empty list sets nothing; give at least one {value: V}, or remove the key", k))
		}
		for i, item := range list {
			fields, ok := item.(map[string]any)
			if !ok {
				return fail(fmt.Errorf("%s: item %d: want {value: V, constraints: {...}}, got %v", k, i+1, item))
			}
			for f := range fields {
				if f != "value" && f != "constraints" {
					return fail(fmt.Errorf("%s: item %d: unknown field %q (an item has value and constraints)", k, i+1, f))
				}
			}
			if _, ok := fields["value"]; !ok {
				return fail(fmt.Errorf("%s: item %d: no value", k, i+1))
			}
		}
		// The server's loader names no key for a bad constraint
		// ("unknown constraint type"): load each key alone to say which.
		if sub, err := yaml.Marshal(map[string]any{k: list}); err == nil {
			if errs := dynamicconfig.LoadYamlFile(sub).Errors; len(errs) > 0 {
				return fail(fmt.Errorf("%s: %w", k, errors.Join(errs...)))
			}
		}
	}
	lr := dynamicconfig.LoadYamlFile(b)
	problems := append(lr.Errors, lr.Warnings...)
	for k, cvs := range lr.Map {
		for _, cv := range cvs {
			if err := checkOneHostValue(k.String(), cv.Value); err != nil {
				problems = append(problems, fmt.Errorf("key %q: %w", written[k.String()], err))
			}
		}
	}
	if len(problems) > 0 {
		msg := errors.Join(problems...).Error()
		for low, orig := range written {
			msg = strings.ReplaceAll(msg, `"`+low+`"`, `"`+orig+`"`)
		}
		return fail(errors.New(msg))
	}
	return lr.Map, nil
}

// checkOneHostValue refuses values of the one-host settings that the
// server takes without a word and then fails on (a task queue with no
// partition panics in matching; a queue read 0 times a second stalls).
func checkOneHostValue(key string, v any) error {
	n, ok := v.(int)
	if !ok {
		return nil
	}
	switch {
	case strings.HasSuffix(key, "partitions") && n < 1:
		return fmt.Errorf("value %d: a task queue needs at least 1 partition", n)
	case strings.HasSuffix(key, "maxpollrps") && n < 1:
		return fmt.Errorf("value %d: must be at least 1 (reads per second)", n)
	}
	return nil
}

// dynamicConfig is OneHostDynamicConfig with cfg.DynamicConfig over it.
// lateSearchAttributes: some custom search attributes are registered
// through the API after the start (prepareStore), so the server reads
// its search attributes afresh on every lookup
// (system.forceSearchAttributesCacheRefreshOnRead) for this run; without
// it, a start that sets one fails ("no mapping defined for search
// attribute") until the server's caches refresh. Otherwise it stays off:
// it costs a read of the cluster metadata on every lookup (every start,
// upsert and visibility record).
func dynamicConfig(over dynamicconfig.ConfigValueMap, lateSearchAttributes bool) dynamicconfig.StaticClient {
	c := dynamicconfig.StaticClient{}
	for k, v := range OneHostDynamicConfig {
		c[dynamicconfig.MakeKey(k)] = []dynamicconfig.ConstrainedValue{{Value: v}}
	}
	if lateSearchAttributes {
		c[dynamicconfig.MakeKey("system.forceSearchAttributesCacheRefreshOnRead")] = []dynamicconfig.ConstrainedValue{{Value: true}}
	}
	for k, v := range over {
		c[k] = v
	}
	return c
}

// Server is a running embedded server.
type Server struct {
	cfg          Config
	temporal     temporal.Server
	ui           *uiserver.Server
	frontendAddr string
	httpAddr     string
	uiAddr       string
	dbLock       *os.File // held while the server runs on a SQLite file
	pgLock       *sql.DB  // holds the PostgreSQL database's lock (lockPostgres)
	// lateSearchAttributes: registered through the API after the start
	// (prepareStore).
	lateSearchAttributes []string
	internal             []ServicePort
}

// ServicePort is a port the embedded server listens on besides the
// frontend's gRPC port (Config.Port) and the UI's.
type ServicePort struct {
	// Service is the Temporal service: "frontend", "history", "matching"
	// or "worker".
	Service string
	// Kind is "grpc" (the service's gRPC API, used by the other services)
	// or "membership" (the cluster membership gossip, ringpop).
	Kind string
	// Addr is host:port.
	Addr string
}

// InternalPorts are the seven ports the server's own services listen on
// besides the frontend's gRPC port and HTTP API (HTTPAddr): the frontend's membership port, and
// the gRPC and membership ports of history, matching and worker. They are
// free ports in 20000-31999 chosen at each start (freePort), on the
// frontend's IP (frontend membership) or loopback. Nobody outside the
// process needs them; the server exposes no metrics or pprof port.
func (s *Server) InternalPorts() []ServicePort { return s.internal }

// FrontendAddr is host:port of the frontend gRPC endpoint.
func (s *Server) FrontendAddr() string { return s.frontendAddr }

// HTTPAddr is host:port of the frontend's HTTP API (Config.HTTPPort).
func (s *Server) HTTPAddr() string { return s.httpAddr }

// UIURL is the URL of the Temporal UI, "" when disabled.
func (s *Server) UIURL() string {
	if s.uiAddr == "" {
		return ""
	}
	return "http://" + s.uiAddr
}

// Namespace is the namespace created at start.
func (s *Server) Namespace() string { return s.cfg.Namespace }

// Start starts the server and the UI and returns once the frontend
// answers and the search attributes are registered.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.DBPath == "" {
		cfg.DBPath = filepath.Join(".delegate", "temporal.db")
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "error"
	}
	if cfg.TLS != nil && cfg.UIPort >= 0 {
		return nil, errors.New("devserver: the UI is not supported with TLS (set UIPort -1)")
	}
	var err error
	var dbLock *os.File
	var pgLock *sql.DB
	started := false
	if cfg.Port == 0 {
		if cfg.Port, err = freePort(cfg.IP); err != nil {
			return nil, err
		}
	}
	if cfg.HTTPPort == 0 {
		cfg.HTTPPort, err = freePort(cfg.IP)
		for err == nil && (cfg.HTTPPort == cfg.Port || cfg.HTTPPort == cfg.UIPort) {
			cfg.HTTPPort, err = freePort(cfg.IP)
		}
		if err != nil {
			return nil, err
		}
	}
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, ConnectAttributes: map[string]string{}}
	visCfg := sqlCfg
	if cfg.Postgres != "" {
		if sqlCfg, visCfg, err = postgresConfigs(cfg.Postgres); err != nil {
			return nil, err
		}
		if err := setupPostgres(sqlCfg, visCfg); err != nil {
			return nil, err
		}
		if pgLock, err = lockPostgres(ctx, sqlCfg, 5*time.Minute); err != nil {
			return nil, err
		}
		defer func() {
			if !started {
				_ = pgLock.Close()
			}
		}()
	} else if cfg.Memory {
		sqlCfg.ConnectAttributes["mode"] = "memory"
		sqlCfg.ConnectAttributes["cache"] = "shared"
		sqlCfg.DatabaseName = fmt.Sprintf("delegate-%d-%d", os.Getpid(), time.Now().UnixNano())
	} else {
		sqlCfg.ConnectAttributes["mode"] = "rwc"
		// A pragma, under the name the plugin passes on (and checks): the
		// "_journal_mode" spelling of other drivers was ignored, so the file
		// stayed in rollback-journal mode.
		sqlCfg.ConnectAttributes["journal_mode"] = "wal"
		sqlCfg.DatabaseName = cfg.DBPath
		if err := os.MkdirAll(filepath.Dir(cfg.DBPath), 0o755); err != nil {
			return nil, fmt.Errorf("devserver: --db directory: %w", err)
		}
		// One server per database file: two would corrupt each other's
		// state. The lock goes with the process, however it ends.
		if dbLock, err = os.OpenFile(cfg.DBPath+".lock", os.O_CREATE|os.O_RDWR, 0o600); err != nil {
			return nil, fmt.Errorf("devserver: --db lock: %w", err)
		}
		if err := syscall.Flock(int(dbLock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = dbLock.Close()
			return nil, fmt.Errorf("devserver: %s is in use by another server (another delegate dev?); stop it or give another --db", cfg.DBPath)
		}
		defer func() {
			if !started {
				_ = dbLock.Close()
			}
		}()
		if err := prepareSQLiteFile(sqlCfg, cfg.DBPath); err != nil {
			return nil, err
		}
	}
	late, err := prepareStore(sqlCfg, cfg.Namespace, cfg.SearchAttributes)
	if err != nil {
		return nil, err
	}

	scfg, err := serverConfig(cfg, sqlCfg, visCfg)
	if err != nil {
		return nil, err
	}
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: cfg.LogLevel, Format: "console"}))
	srv, err := temporal.NewServer(
		temporal.WithConfig(scfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dynamicConfig(cfg.DynamicConfig, len(late) > 0)),
	)
	if err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("devserver: starting Temporal: %w", err)
	}
	s := &Server{cfg: cfg, temporal: srv, frontendAddr: net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.Port)),
		httpAddr: net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.HTTPPort)), dbLock: dbLock, pgLock: pgLock, lateSearchAttributes: late}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		rpc := scfg.Services[name].RPC
		ip := rpc.BindOnIP
		if ip == "" {
			ip = "127.0.0.1" // BindOnLocalHost
		}
		if name != "frontend" {
			s.internal = append(s.internal, ServicePort{Service: name, Kind: "grpc", Addr: net.JoinHostPort(ip, strconv.Itoa(rpc.GRPCPort))})
		}
		s.internal = append(s.internal, ServicePort{Service: name, Kind: "membership", Addr: net.JoinHostPort(ip, strconv.Itoa(rpc.MembershipPort))})
	}
	started = true // from here s.Stop releases the lock
	if cfg.Postgres != "" {
		if err := s.ensureNamespace(ctx); err != nil {
			s.Stop()
			return nil, err
		}
	}
	if err := s.ensureSearchAttributes(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	if cfg.UIPort >= 0 {
		if err := s.startUI(); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

func serverConfig(cfg Config, sqlCfg, visCfg *config.SQL) (*config.Config, error) {
	// The internal services (InternalPorts) take free ports chosen at
	// each start, below the kernel's ephemeral range (freePort), on
	// loopback: none next to --port, which a user choosing free ports
	// would not expect taken. (They followed the frontend's port, so that
	// a restart named the same addresses; the cluster members the last
	// server recorded are removed before the start, prepareStore, so a
	// restart on other ports runs at once.)
	ports := make([]int, 7)
	for i := range ports {
		p, err := freePort(cfg.IP)
		for err == nil && (p == cfg.Port || p == cfg.UIPort || p == cfg.HTTPPort) { // not listening yet
			p, err = freePort(cfg.IP)
		}
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	svc := func(grpc, membership int, bindIP string) config.Service {
		rpc := config.RPC{GRPCPort: grpc, MembershipPort: membership, BindOnLocalHost: bindIP == ""}
		if bindIP != "" {
			rpc.BindOnIP = bindIP
		}
		return config.Service{RPC: rpc}
	}
	frontend := svc(cfg.Port, ports[0], cfg.IP)
	// The HTTP API: Nexus requests and completion callbacks (HTTPPort).
	frontend.RPC.HTTPPort = cfg.HTTPPort
	front := net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.Port))
	frontHTTP := net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.HTTPPort))
	var rootTLS config.RootTLS
	if t := cfg.TLS; t != nil {
		clientTLS := config.ClientTLS{ServerName: "localhost", RootCAFiles: []string{t.CAFile}}
		rootTLS = config.RootTLS{
			Frontend: config.GroupTLS{
				Server: config.ServerTLS{CertFile: t.CertFile, KeyFile: t.KeyFile, ClientCAFiles: []string{t.CAFile}, RequireClientAuth: t.RequireClientAuth},
				Client: clientTLS,
			},
			SystemWorker: config.WorkerTLS{CertFile: t.ClientCertFile, KeyFile: t.ClientKeyFile, Client: clientTLS},
		}
	}
	return &config.Config{
		Global: config.Global{
			Membership: config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"},
			// No Metrics: the server's own metrics had an endpoint on a port
			// nobody was told of, and recording them cost CPU on every call
			// (nil is go.temporal.io/server's no-op handler).
			TLS: rootTLS,
		},
		Persistence: config.Persistence{
			DefaultStore: "default", VisibilityStore: "visibility", NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{"default": {SQL: sqlCfg}, "visibility": {SQL: visCfg}},
		},
		ClusterMetadata: &cluster.Config{
			EnableGlobalNamespace: false, FailoverVersionIncrement: 10,
			MasterClusterName: "active", CurrentClusterName: "active",
			ClusterInformation: map[string]cluster.ClusterInformation{
				"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: front, HTTPAddress: frontHTTP},
			},
		},
		DCRedirectionPolicy: config.DCRedirectionPolicy{Policy: "noop"},
		Services: map[string]config.Service{
			"frontend": frontend,
			"history":  svc(ports[1], ports[2], ""),
			"matching": svc(ports[3], ports[4], ""),
			"worker":   svc(ports[5], ports[6], ""),
		},
		Archival: config.Archival{
			History:    config.HistoryArchival{State: "disabled"},
			Visibility: config.VisibilityArchival{State: "disabled"},
		},
		PublicClient: config.PublicClient{HostPort: front},
		NamespaceDefaults: config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
			History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
			Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
		}},
	}, nil
}

// LoopbackConnection is the connection to a server on this host: no gRPC
// compression. go.temporal.io/sdk gzips every request by default
// (client.GrpcCompressionGzip), and the server answers in kind; over
// loopback that is CPU and nothing else (a delegation spent about 3.7
// core-ms on it, a trivial workflow 1.7, docs/performance.md).
func LoopbackConnection() client.ConnectionOptions {
	return client.ConnectionOptions{GrpcCompression: &client.GrpcCompressionNone{}}
}

// ClientOptions are the Temporal client options that reach this server's
// frontend in its namespace: with Config.TLS, TLS trusting CAFile (server
// name "localhost") and the client certificate. Errors: a TLS file cannot
// be read.
func (s *Server) ClientOptions() (client.Options, error) {
	o := client.Options{HostPort: s.frontendAddr, Namespace: s.cfg.Namespace, Logger: quietLogger{},
		ConnectionOptions: LoopbackConnection()}
	t := s.cfg.TLS
	if t == nil {
		return o, nil
	}
	ca, err := os.ReadFile(t.CAFile)
	if err != nil {
		return o, fmt.Errorf("devserver: TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return o, fmt.Errorf("devserver: TLS CA %s: no PEM certificate", t.CAFile)
	}
	tc := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if t.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.ClientCertFile, t.ClientKeyFile)
		if err != nil {
			return o, fmt.Errorf("devserver: TLS client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	o.ConnectionOptions.TLS = tc
	return o, nil
}

// dial connects the server's own client to its frontend (ClientOptions) in
// namespace ns ("" for calls outside any namespace).
func (s *Server) dial(ctx context.Context, ns string) (client.Client, error) {
	opts, err := s.ClientOptions()
	if err != nil {
		return nil, err
	}
	opts.Namespace = ns
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("devserver: dialing the frontend: %w", err)
	}
	return c, nil
}

// ensureSearchAttributes waits for the frontend and registers any custom
// search attribute that is missing (a database created by an older run).
func (s *Server) ensureSearchAttributes(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := s.dial(ctx, s.cfg.Namespace)
	if err != nil {
		return err
	}
	defer c.Close()
	var resp *operatorservice.ListSearchAttributesResponse
	for {
		resp, err = c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.cfg.Namespace})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: the frontend did not answer: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, n := range s.cfg.SearchAttributes {
		if _, ok := resp.GetCustomAttributes()[n]; !ok {
			missing[n] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: s.cfg.Namespace, SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("devserver: registering search attributes: %w", err)
	}
	return nil
}

func (s *Server) startUI() error {
	port := s.cfg.UIPort
	if port == 0 {
		p, err := freePort(s.cfg.IP)
		if err != nil {
			return err
		}
		port = p
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.IP, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("devserver: UI port %d: %w", port, err)
	}
	_ = ln.Close()
	cfg := &uiconfig.Config{
		Host:                s.cfg.IP,
		Port:                port,
		TemporalGRPCAddress: s.frontendAddr,
		EnableUI:            true,
		DefaultNamespace:    s.cfg.Namespace,
		DisableNewsFetch:    true,
		HideLogs:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
	}
	if s.cfg.CodecEndpoint != "" {
		// The UI's browser code sends payloads there to show them
		// decoded (Temporal's codec server protocol).
		cfg.Codec = uiconfig.Codec{Endpoint: s.cfg.CodecEndpoint}
	}
	s.ui = uiserver.NewServer(uioptions.WithConfigProvider(cfg))
	go func() { _ = s.ui.Start() }()
	s.uiAddr = net.JoinHostPort(s.cfg.IP, strconv.Itoa(port))
	return waitTCP(s.uiAddr, 30*time.Second)
}

// Stop stops the UI and the server.
func (s *Server) Stop() {
	if s.ui != nil {
		s.ui.Stop()
	}
	if s.temporal != nil {
		_ = s.temporal.Stop()
	}
	if s.dbLock != nil {
		_ = s.dbLock.Close()
	}
	if s.pgLock != nil {
		_ = s.pgLock.Close()
	}
}

// freePort finds a free port below the kernel's ephemeral range (Linux
// default 32768-60999). A port found by listening on port 0 and closing
// again can be handed to any other process that listens on port 0 before
// the server binds it (seen in CI: "bind: address already in use", and the
// server's fatal log exits the process); ports below that range are never
// handed out that way. Ports are not handed out twice by one process.
func freePort(ip string) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if portsTaken[p] || !portFree(ip, p) {
			continue
		}
		portsTaken[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("devserver: no free port found in 20000-31999 on %s", ip)
}

var (
	portMu     sync.Mutex
	portsTaken = map[int]bool{}
)

func portFree(ip string, port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

func waitTCP(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devserver: %s did not accept connections: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// quietLogger drops the SDK client's own log lines.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
