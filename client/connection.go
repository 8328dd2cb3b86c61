package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"

	sdkclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/a2adelegate/delegate/codec"
)

// Connection says how to reach a Temporal server the way the Temporal CLI
// and SDKs take it (go.temporal.io/sdk/contrib/envconfig): a profile from
// the TOML config file (TEMPORAL_CONFIG_FILE, default
// $XDG_CONFIG_HOME/temporalio/temporal.toml; profile TEMPORAL_PROFILE or
// "default"), then the environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH,
// TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH,
// TEMPORAL_TLS_SERVER_NAME, ...), then the fields set here (the CLI's
// flags of the same names as the Temporal CLI's). Empty fields leave what
// the file and the environment say; with nothing set at all the address is
// 127.0.0.1:7233 and the namespace "default".
//
// An API key turns TLS on (Temporal Cloud); so do a client certificate,
// a CA or a server name. The API key is a secret: it is never in an error
// of this package.
type Connection struct {
	Address, Namespace string
	// APIKey is sent as "Authorization: Bearer" on every call.
	APIKey string
	// TLSCertPath and TLSKeyPath are a client certificate for mutual TLS
	// (PEM files); TLSCAPath the CA that signs the server's certificate
	// (default: the system roots); TLSServerName overrides the name the
	// server's certificate is checked against.
	TLSCertPath, TLSKeyPath, TLSCAPath, TLSServerName string
	// TLS forces TLS on (true) or off (false); nil: decided by the rest.
	TLS *bool
	// Profile names the profile of the config file (default
	// TEMPORAL_PROFILE, then "default"); ConfigFile the file (default
	// TEMPORAL_CONFIG_FILE, then the user config dir's).
	Profile, ConfigFile string
	// EncryptionKeyFile holds the keys that seal every payload (package
	// codec); empty: $DELEGATE_ENCRYPTION_KEYS, and without it payloads go
	// in clear. The worker, the CLI and every backend of one namespace
	// must share the keys.
	EncryptionKeyFile string
}

// Defaults of a Connection with nothing set anywhere.
const (
	DefaultAddress   = "127.0.0.1:7233"
	DefaultNamespace = "default"
)

// Options resolves the connection into Temporal client options (HostPort,
// Namespace, Credentials, ConnectionOptions.TLS; no gRPC compression for
// an address on this host, Loopback). Errors: the config file
// cannot be read or parsed, a named profile is missing, a TLS setting is
// incomplete (a certificate without its key) or its files cannot be read.
func (c Connection) Options() (sdkclient.Options, error) {
	env := nonEmptyEnv{}
	// A config file named by flag or environment must be there: a typo
	// would otherwise connect to the defaults (another cluster).
	file := c.ConfigFile
	if file == "" {
		file, _ = env.LookupEnv("TEMPORAL_CONFIG_FILE")
	}
	if file != "" {
		if _, err := os.Stat(file); err != nil {
			return sdkclient.Options{}, fmt.Errorf("temporal connection: config file: %w", err)
		}
	}
	if v, ok := env.LookupEnv("TEMPORAL_TLS"); ok {
		if _, err := strconv.ParseBool(v); err != nil {
			return sdkclient.Options{}, fmt.Errorf("temporal connection: TEMPORAL_TLS=%q: want true or false", v)
		}
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath: file, ConfigFileProfile: c.Profile, ConfigFileStrict: true, EnvLookup: env,
	})
	if err != nil {
		return sdkclient.Options{}, fmt.Errorf("temporal connection: %w", inert(err))
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&prof.Address, c.Address)
	set(&prof.Namespace, c.Namespace)
	set(&prof.APIKey, c.APIKey)
	if c.TLSCertPath != "" || c.TLSKeyPath != "" || c.TLSCAPath != "" || c.TLSServerName != "" || c.TLS != nil {
		if prof.TLS == nil {
			prof.TLS = &envconfig.ClientConfigTLS{}
		}
		t := prof.TLS
		if c.TLSCertPath != "" {
			t.ClientCertPath, t.ClientCertData = c.TLSCertPath, nil
		}
		if c.TLSKeyPath != "" {
			t.ClientKeyPath, t.ClientKeyData = c.TLSKeyPath, nil
		}
		if c.TLSCAPath != "" {
			t.ServerCACertPath, t.ServerCACertData = c.TLSCAPath, nil
		}
		set(&t.ServerName, c.TLSServerName)
		if c.TLS != nil {
			t.Disabled = !*c.TLS
		}
	}
	if strings.TrimSpace(prof.Address) == "" {
		prof.Address = DefaultAddress
	}
	if strings.TrimSpace(prof.Namespace) == "" {
		prof.Namespace = DefaultNamespace
	}
	if t := prof.TLS; t != nil && !t.Disabled {
		if (t.ClientCertPath != "" || len(t.ClientCertData) > 0) != (t.ClientKeyPath != "" || len(t.ClientKeyData) > 0) {
			return sdkclient.Options{}, errors.New("temporal connection: a TLS client certificate needs its key and the key its certificate (--tls-cert-path with --tls-key-path)")
		}
		if t.DisableHostVerification {
			return sdkclient.Options{}, errors.New("temporal connection: TEMPORAL_TLS_DISABLE_HOST_VERIFICATION (disable_host_verification) would accept any server certificate; delegate refuses it: give the server's CA with --tls-ca-path and its name with --tls-server-name")
		}
	}
	if t := prof.TLS; t != nil && t.Disabled {
		tlsSet := t.ClientCertPath != "" || len(t.ClientCertData) > 0 || t.ServerCACertPath != "" || len(t.ServerCACertData) > 0 || t.ServerName != ""
		if prof.APIKey != "" || tlsSet {
			return sdkclient.Options{}, errors.New("temporal connection: TLS is off (--tls=false or TEMPORAL_TLS=false) but an API key or TLS settings are given: the key would travel in clear, the certificates would be ignored; drop one or the other")
		}
	}
	o, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return sdkclient.Options{}, fmt.Errorf("temporal connection: %w", redact(err, prof.APIKey))
	}
	if o.ConnectionOptions.TLS != nil && o.ConnectionOptions.TLS.MinVersion == 0 {
		o.ConnectionOptions.TLS.MinVersion = tls.VersionTLS12
	}
	if Loopback(o.HostPort) {
		o.ConnectionOptions.GrpcCompression = &sdkclient.GrpcCompressionNone{}
	}
	keys, err := codec.FromFileOrEnv(c.EncryptionKeyFile)
	if err != nil {
		return sdkclient.Options{}, err
	}
	if keys != nil {
		o.DataConverter, o.FailureConverter = keys.DataConverter(), keys.FailureConverter()
	}
	return o, nil
}

// Loopback reports whether hostPort names this host: "localhost", or an IP
// address of the loopback range (127.0.0.0/8, ::1). A client of such an
// address sends its gRPC messages uncompressed: go.temporal.io/sdk gzips
// every request by default (client.GrpcCompressionGzip) and the server
// answers in kind, which over loopback is CPU and nothing else (a worker
// spent about 13 % of its CPU on it, docs/performance.md). A proxy on
// loopback (a port-forward, a sidecar) carries them uncompressed on.
func Loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}

// Dial connects to Temporal as conn says (Options), with the SDK's
// default logger. Errors: those of Options, or the dial's, which name the
// address, never the API key.
func Dial(ctx context.Context, conn Connection) (sdkclient.Client, error) {
	o, err := conn.Options()
	if err != nil {
		return nil, err
	}
	c, err := sdkclient.DialContext(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s: %w", Describe(o), err)
	}
	return c, nil
}

// Describe is the connection for messages: address, namespace, and how it
// authenticates, never the key.
func Describe(o sdkclient.Options) string {
	var how []string
	if o.ConnectionOptions.TLS != nil {
		if len(o.ConnectionOptions.TLS.Certificates) > 0 || o.ConnectionOptions.TLS.GetClientCertificate != nil {
			how = append(how, "mTLS")
		} else {
			how = append(how, "TLS")
		}
	}
	if o.Credentials != nil {
		how = append(how, "API key")
	}
	s := fmt.Sprintf("%s (namespace %s", o.HostPort, o.Namespace)
	if len(how) > 0 {
		s += ", " + strings.Join(how, ", ")
	}
	return s + ")"
}

// nonEmptyEnv is the process environment for envconfig, where a variable
// set to "" counts as unset: compose and Kubernetes files write ${VAR} for
// variables they do not always give, and an empty TEMPORAL_ADDRESS must not
// override a profile's address.
type nonEmptyEnv struct{}

func (nonEmptyEnv) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && k != "" {
			out = append(out, kv)
		}
	}
	return out
}

func (nonEmptyEnv) LookupEnv(key string) (string, bool) {
	v, ok := os.LookupEnv(key)
	return v, ok && v != ""
}

// quoted matches the quoted excerpts a TOML parse error repeats from the
// file, which may be a secret.
var quoted = regexp.MustCompile(`"[^"]*"`)

// inert removes the file's own text from a config parse error.
func inert(err error) error {
	if !strings.Contains(err.Error(), "failed parsing config") {
		return err
	}
	return errors.New(quoted.ReplaceAllString(err.Error(), `"…"`))
}

// redact removes secret from err's text.
func redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), secret, "[redacted]"))
}
