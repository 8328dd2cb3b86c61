package cards

import (
	"net"
	"net/url"
	"strings"
)

// LabelOrigin is u's scheme://host:port (lower case, default ports written), or
// "" when u is not an absolute http(s) URL with a host nor a gRPC target.
// A gRPC target (host:port, dns:///host:port, grpc:// or grpcs://, read
// as the client reads it: ParseGRPCTarget) is grpc://host:port.
// Whatever does not parse is "", never the text itself: a query, user
// info or a path in it would reach a label. It is the agent_origin of
// delegate's metrics (internal/metrics) and of the worker's log lines.
func LabelOrigin(u string) string {
	p, err := url.Parse(u)
	if err == nil && p.Host != "" && (p.Scheme == "http" || p.Scheme == "https") {
		host, port := strings.ToLower(p.Hostname()), p.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[p.Scheme]
		}
		return p.Scheme + "://" + net.JoinHostPort(host, port)
	}
	t, err := ParseGRPCTarget(u)
	if err != nil {
		return ""
	}
	return "grpc://" + t.Addr()
}
