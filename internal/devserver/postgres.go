package devserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	postgresplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
	"google.golang.org/protobuf/types/known/durationpb"
)

// postgresConfigs reads Config.Postgres, postgres://USER[:PASSWORD]@HOST:PORT/DB,
// into the SQL configs of the default store (DB) and the visibility store
// (DB_visibility), both with the server's "postgres12" plugin.
func postgresConfigs(raw string) (store, visibility *config.SQL, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" || u.Host == "" || u.Port() == "" {
		return nil, nil, fmt.Errorf("devserver: --server %q: want postgres://USER@HOST:PORT/DB", redact(raw))
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return nil, nil, fmt.Errorf("devserver: --server %q: port %q is not a TCP port, 1 to 65535 (postgres://USER@HOST:PORT/DB)", redact(raw), u.Port())
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		return nil, nil, fmt.Errorf("devserver: --server %q: the database name is missing (postgres://USER@HOST:PORT/DB)", redact(raw))
	}
	if strings.Contains(db, "/") {
		return nil, nil, fmt.Errorf("devserver: --server %q: database name %q has a \"/\" (postgres://USER@HOST:PORT/DB)", redact(raw), db)
	}
	if u.User == nil || u.User.Username() == "" {
		return nil, nil, fmt.Errorf("devserver: --server %q: the user is missing (postgres://USER@HOST:PORT/DB)", redact(raw))
	}
	// The parameters as the server's "postgres12" plugin's driver (lib/pq)
	// reads them: a bad one (sslmode=bogus) failed only at the dial.
	if _, err := pq.NewConnector(raw); err != nil {
		return nil, nil, fmt.Errorf("devserver: --server %q: %s", redact(raw), strings.TrimPrefix(err.Error(), "pq: "))
	}
	pw, _ := u.User.Password()
	store = &config.SQL{
		PluginName: postgresplugin.PluginName, ConnectProtocol: "tcp", ConnectAddr: u.Host,
		User: u.User.Username(), Password: pw, DatabaseName: db,
		MaxConns: 20, MaxIdleConns: 20, MaxConnLifetime: time.Hour,
		ConnectAttributes: map[string]string{},
	}
	for k, v := range u.Query() {
		store.ConnectAttributes[k] = v[0]
	}
	vis := *store
	vis.DatabaseName = db + "_visibility"
	vis.ConnectAttributes = store.ConnectAttributes
	return store, &vis, nil
}

// redact drops a password from a URL for messages.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return raw
}

// setupPostgres creates the two databases when missing and brings their
// schemas to the server's version with the Temporal server's own SQL
// schema tool (go.temporal.io/server/tools/sql, the embedded
// postgresql/v12 schemas): what temporal-sql-tool create-database,
// setup-schema -v 0.0 and update-schema do.
func setupPostgres(store, visibility *config.SQL) error {
	// The server's plugin reports only "no usable database connection
	// found": ask PostgreSQL itself first, for its reason.
	if err := ping(store); err != nil {
		return fmt.Errorf("devserver: PostgreSQL at %s as %q: %w", store.ConnectAddr, store.User, err)
	}
	logger := log.NewNoopLogger()
	for _, s := range []struct {
		cfg  *config.SQL
		name string
	}{{store, "postgresql/v12/temporal"}, {visibility, "postgresql/v12/visibility"}} {
		c := *s.cfg
		if err := sqltool.DoCreateDatabase(&c, "postgres", logger); err != nil && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("devserver: creating database %s: %w", s.cfg.DatabaseName, err)
		}
		conn, err := sqltool.NewConnection(s.cfg, logger)
		if err != nil {
			return fmt.Errorf("devserver: connecting to %s: %w", s.cfg.DatabaseName, err)
		}
		if _, err := conn.ReadSchemaVersion(); err != nil {
			if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
				conn.Close()
				return fmt.Errorf("devserver: schema of %s: %w", s.cfg.DatabaseName, err)
			}
		}
		err = schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: s.cfg.DatabaseName, SchemaName: s.name}, logger).Run()
		conn.Close()
		if err != nil {
			return fmt.Errorf("devserver: updating the schema of %s: %w", s.cfg.DatabaseName, err)
		}
	}
	return nil
}

// ping connects to the server's maintenance database "postgres".
func ping(c *config.SQL) error {
	db, err := sql.Open("postgres", pqDSN(c, "postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// pqDSN is the lib/pq URL (the driver the server's postgres12 plugin
// registers) of database db on c's server; sslmode "disable" unless c's
// connect attributes say otherwise, as the plugin does.
func pqDSN(c *config.SQL, db string) string {
	u := url.URL{Scheme: "postgres", Host: c.ConnectAddr, Path: "/" + db, User: url.User(c.User)}
	if c.Password != "" {
		u.User = url.UserPassword(c.User, c.Password)
	}
	mode := c.ConnectAttributes["sslmode"]
	if mode == "" {
		mode = "disable"
	}
	u.RawQuery = url.Values{"sslmode": {mode}, "connect_timeout": {"10"}}.Encode()
	return u.String()
}

// ensureNamespace registers the namespace on a server whose store does
// not have it yet (a new PostgreSQL database), retention one day.
func (s *Server) ensureNamespace(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := s.dial(ctx, "")
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: s.cfg.Namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
			HistoryArchivalState: enumspb.ARCHIVAL_STATE_DISABLED, VisibilityArchivalState: enumspb.ARCHIVAL_STATE_DISABLED,
		})
		var exists *serviceerror.NamespaceAlreadyExists
		if err == nil || errors.As(err, &exists) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: registering namespace %q: %w", s.cfg.Namespace, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	// The new namespace is usable once the frontend's cache has it.
	for {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.cfg.Namespace})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: namespace %q: %w", s.cfg.Namespace, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// DatabaseBytes is the size of the server's PostgreSQL databases (both),
// pg_database_size; an error for SQLite.
func (s *Server) DatabaseBytes(ctx context.Context) (int64, error) {
	if s.cfg.Postgres == "" {
		return 0, errors.New("devserver: database size is measured on PostgreSQL only")
	}
	store, vis, err := postgresConfigs(s.cfg.Postgres)
	if err != nil {
		return 0, err
	}
	db, err := sql.Open("postgres", pqDSN(store, store.DatabaseName))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRowContext(ctx, "SELECT pg_database_size($1) + pg_database_size($2)", store.DatabaseName, vis.DatabaseName).Scan(&n)
	return n, err
}

// CheckPostgresURL reports whether raw is a URL Config.Postgres takes
// (postgres://USER[:PASSWORD]@HOST:PORT/DB); the error never shows the
// password.
func CheckPostgresURL(raw string) error {
	_, _, err := postgresConfigs(raw)
	return err
}

// pgLockKey is the PostgreSQL advisory lock (per database) an embedded
// server holds on its database while it runs.
const pgLockKey = 0x64656c6567617465 // "delegate"

// lockPostgres takes the database's advisory lock for one embedded server,
// waiting (at most wait) while another holds it, as a database file's lock
// does for SQLite: two servers on one database form one cluster of
// strangers. Under the lock, prepareStore removes the cluster members the
// last server recorded (every bench run and test picks its own ports). The
// lock goes with the returned connection (closed by Server.Stop) or the
// session, however it ends.
func lockPostgres(ctx context.Context, store *config.SQL, wait time.Duration) (*sql.DB, error) {
	db, err := sql.Open("postgres", pqDSN(store, store.DatabaseName))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // the lock is the session's: keep the one
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	deadline := time.Now().Add(wait)
	for {
		var ok bool
		if err := db.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, int64(pgLockKey)).Scan(&ok); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("devserver: locking database %s: %w", store.DatabaseName, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			_ = db.Close()
			return nil, fmt.Errorf("devserver: database %s is in use by another embedded server (delegate bench --server, or a test) for more than %s; stop it or give another database", store.DatabaseName, wait)
		}
		select {
		case <-ctx.Done():
			_ = db.Close()
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return db, nil
}
