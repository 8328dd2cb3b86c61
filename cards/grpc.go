package cards

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2adelegate/delegate/contracts"
)

// GRPCTarget is where a gRPC interface (A2A 1.0 §10) is reached: a host,
// a port, and whether the connection is TLS.
//
// A card's gRPC interface url is not an http URL in general; peers write
// it in several ways, all read here (ParseGRPCTarget):
//
//   - "host:port" (a2a-go's a2agrpc examples write "127.0.0.1:PORT"),
//     "dns:///host:port" or "dns:host:port" (gRPC name syntax): TLS,
//     unless the host is loopback, where it is plaintext (as the guard
//     allows plain http to loopback only);
//   - "grpcs://host[:port]" and "https://host[:port]": TLS (port 443 by
//     default);
//   - "grpc://host[:port]" and "http://host[:port]": plaintext (port 80 by
//     default), which the guard allows only to loopback or to an origin
//     whose trust entry says allow_http.
//
// Refused: a path other than "/" (A2A 1.0 §10.1: the A2AService methods
// are called at the server's root, /lf.a2a.v1.A2AService/…; gRPC clients
// cannot prefix them, so an url such as https://host/a2a/grpc names
// nothing this client can call), userinfo, a query or a fragment, a DNS
// authority ("dns://8.8.8.8/host:port": the guard resolves names itself),
// and any other scheme.
type GRPCTarget struct {
	Host string // a host name or an IP address, without brackets
	Port string
	TLS  bool
}

// Addr is host:port, the address dialed.
func (t GRPCTarget) Addr() string { return net.JoinHostPort(t.Host, t.Port) }

// URL is the target in URL form, "https://host:port" (TLS) or
// "http://host:port": the HTTP guard's rules (CheckInterface), the
// interface's origin (credentials, interface_origins) and the trust entry
// apply to it.
func (t GRPCTarget) URL() string {
	scheme := "http"
	if t.TLS {
		scheme = "https"
	}
	return scheme + "://" + t.Addr()
}

// ParseGRPCTarget reads a gRPC interface url (see GRPCTarget).
func ParseGRPCTarget(s string) (GRPCTarget, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return GRPCTarget{}, fmt.Errorf("empty gRPC target")
	}
	bare := func(hostport string) (GRPCTarget, error) {
		host, port, err := net.SplitHostPort(hostport)
		if err != nil || host == "" || strings.ContainsAny(host, "/?#@ ") {
			return GRPCTarget{}, fmt.Errorf("gRPC target %q is not host:port", truncateURL(s))
		}
		if err := checkPort(port); err != nil {
			return GRPCTarget{}, fmt.Errorf("gRPC target %q: %v", truncateURL(s), err)
		}
		return GRPCTarget{Host: strings.ToLower(host), Port: port, TLS: !isLoopbackHost(host)}, nil
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "dns:///"):
		return bare(s[len("dns:///"):])
	case strings.HasPrefix(lower, "dns://"):
		return GRPCTarget{}, fmt.Errorf("gRPC target %q names a DNS server: the guard resolves names itself; write dns:///host:port", truncateURL(s))
	case strings.HasPrefix(lower, "dns:"):
		return bare(s[len("dns:"):])
	case !strings.Contains(s, "://"):
		return bare(s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return GRPCTarget{}, fmt.Errorf("gRPC target %q is not a URL", truncateURL(s))
	}
	var t GRPCTarget
	switch strings.ToLower(u.Scheme) {
	case "grpcs", "https":
		t.TLS, t.Port = true, "443"
	case "grpc", "http":
		t.Port = "80"
	default:
		return GRPCTarget{}, fmt.Errorf("gRPC target %q: scheme %q (want host:port, dns:///host:port, grpc://, grpcs://, http:// or https://)", truncateURL(s), u.Scheme)
	}
	switch {
	case u.Hostname() == "":
		return GRPCTarget{}, fmt.Errorf("gRPC target %q has no host", truncateURL(s))
	case u.User != nil:
		return GRPCTarget{}, fmt.Errorf("gRPC target %q has userinfo", truncateURL(s))
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return GRPCTarget{}, fmt.Errorf("gRPC target %q has a query or a fragment", truncateURL(s))
	case u.Path != "" && u.Path != "/":
		return GRPCTarget{}, fmt.Errorf("gRPC target %q has a path: gRPC methods are called at the server's root (A2A 1.0 §10.1), a path cannot be honoured", truncateURL(s))
	}
	t.Host = strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return GRPCTarget{}, fmt.Errorf("gRPC target %q: %v", truncateURL(s), err)
		}
		t.Port = p
	}
	return t, nil
}

func checkPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
		return fmt.Errorf("port %q is not a port number", p)
	}
	return nil
}

// InterfaceURL is the URL form of an interface's url: the url itself for
// JSON-RPC and HTTP+JSON, GRPCTarget.URL for GRPC. The guard's rules and
// origins apply to it.
func InterfaceURL(binding, rawURL string) (string, error) {
	if binding != string(a2a.TransportProtocolGRPC) {
		return rawURL, nil
	}
	t, err := ParseGRPCTarget(rawURL)
	if err != nil {
		return "", err
	}
	return t.URL(), nil
}

// InterfaceOrigin is the origin of an interface (Origin of its URL form,
// InterfaceURL): the key of its credentials and trust entries.
func InterfaceOrigin(iface contracts.Interface) (string, error) {
	u, err := InterfaceURL(iface.Binding, iface.URL)
	if err != nil {
		return "", err
	}
	return Origin(u)
}

// Dialer returns a dial function (grpc.WithContextDialer) whose
// connections obey the guard for calls on behalf of origin (the card's
// origin, whose trust entry decides allow_private_network), as the
// connections of Client do: the host is resolved, every address checked
// (checkIP), and the connection made to the address checked, so that a
// second DNS answer cannot change it. addr is host:port.
func (g *Guard) Dialer(origin string) func(ctx context.Context, addr string) (net.Conn, error) {
	ct := g.ConnectTimeout
	if ct == 0 {
		ct = 5 * time.Second
	}
	allowPrivate := g.Trust.For(origin).AllowPrivateNetwork
	dialer := &net.Dialer{Timeout: ct}
	resolver := g.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		var lastErr error
		for _, ip := range ips {
			ip = ip.Unmap()
			if err := checkIP(ip, allowPrivate); err != nil {
				lastErr = refuse("%s resolves to %s: %v", host, ip, err)
				continue
			}
			c, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			lastErr = err
		}
		if lastErr == nil {
			lastErr = fmt.Errorf("%s: no address", host)
		}
		return nil, lastErr
	}
}
