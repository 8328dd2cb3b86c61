package cards

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Guard is the HTTP guard for every request made because of a card: the
// card itself, a JWKS named by it, and the agent interface chosen from it.
// The point: a card must not turn the worker into a proxy into the
// internal network.
//
//   - http and https only; plain http only to a loopback origin or an
//     origin whose trust entry says allow_http;
//   - no redirect to another origin (at most 3 redirects);
//   - connect timeout (default 5 s) and response-header timeout (default
//     10 s); bodies are read with a size limit by the callers;
//   - after DNS resolution, private (RFC 1918, RFC 4193), link-local
//     (169.254/16, fe80::/10), unspecified and multicast addresses are
//     refused unless the trust entry of the origin says
//     allow_private_network; the connection goes to the address checked,
//     so a second DNS answer cannot change it;
//   - an interface URL must be on the card's origin, or on one of the trust
//     entry's interface_origins.
type Guard struct {
	Trust          *TrustStore
	ConnectTimeout time.Duration
	HeaderTimeout  time.Duration
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

// ErrGuard marks every refusal of the guard.
var ErrGuard = errors.New("refused by the HTTP guard")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrGuard, fmt.Sprintf(format, args...))
}

// CheckURL applies the scheme rules to u.
func (g *Guard) CheckURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return refuse("%q is not a URL", u)
	}
	origin, err := Origin(u)
	if err != nil {
		return refuse("%v", err)
	}
	switch p.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopbackHost(p.Hostname()) || g.Trust.For(origin).AllowHTTP {
			return nil
		}
		return refuse("plain http to %s: https is required unless the origin is loopback or the trust store says allow_http", origin)
	}
	return refuse("scheme %q: only http and https", p.Scheme)
}

// CheckInterface checks an interface URL taken from a card fetched from
// cardOrigin.
func (g *Guard) CheckInterface(ifaceURL, cardOrigin string) error {
	if err := g.CheckURL(ifaceURL); err != nil {
		return err
	}
	o, _ := Origin(ifaceURL)
	if o == cardOrigin || slices.Contains(g.Trust.For(cardOrigin).InterfaceOrigins, o) {
		return nil
	}
	return refuse("interface %s is not on the card's origin %s (the trust store may allow it with interface_origins)", o, cardOrigin)
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// Client returns an HTTP client whose connections obey the guard for
// requests on behalf of origin (the card's origin: its trust entry decides
// allow_private_network).
func (g *Guard) Client(origin string) *http.Client { return g.ClientTLS(origin, nil) }

// ClientTLS is Client whose transport uses tlsConf (nil: the default) as
// its TLS client configuration; the guard's checks are the same.
func (g *Guard) ClientTLS(origin string, tlsConf *tls.Config) *http.Client {
	ct := g.ConnectTimeout
	if ct == 0 {
		ct = 5 * time.Second
	}
	ht := g.HeaderTimeout
	if ht == 0 {
		ht = 10 * time.Second
	}
	dial := g.Dialer(origin)
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return dial(ctx, addr)
			},
			TLSClientConfig:       tlsConf,
			TLSHandshakeTimeout:   ct,
			ResponseHeaderTimeout: ht,
			MaxIdleConnsPerHost:   4,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return fmt.Errorf("%w: %w: more than 3 redirects", errRedirect, ErrGuard)
			}
			from, _ := Origin(via[0].URL.String())
			to, _ := Origin(req.URL.String())
			if from != to {
				return fmt.Errorf("%w: %w: to another origin (%s)", errRedirect, ErrGuard, to)
			}
			return nil
		},
	}
}

// checkIP refuses the addresses a card must not make the worker reach.
func checkIP(ip netip.Addr, allowPrivate bool) error {
	switch {
	case ip.IsLoopback():
		return nil
	case ip.IsUnspecified():
		return errors.New("unspecified address")
	case ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsLinkLocalMulticast():
		return errors.New("multicast address")
	case allowPrivate:
		return nil
	case ip.IsLinkLocalUnicast():
		return errors.New("link-local address")
	case ip.IsPrivate():
		return errors.New("private address")
	case ip.Is4() && netip.MustParsePrefix("100.64.0.0/10").Contains(ip):
		return errors.New("shared (CGNAT) address")
	case ip.Is4() && netip.MustParsePrefix("0.0.0.0/8").Contains(ip):
		return errors.New("\"this network\" address")
	case ip.Is6() && (netip.MustParsePrefix("64:ff9b::/96").Contains(ip) || netip.MustParsePrefix("64:ff9b:1::/48").Contains(ip) ||
		netip.MustParsePrefix("2002::/16").Contains(ip) || netip.MustParsePrefix("::/96").Contains(ip)):
		// NAT64, 6to4 and IPv4-compatible forms can carry an internal IPv4
		// address.
		return errors.New("IPv6 address that embeds an IPv4 address")
	}
	return nil
}
