package a2aclient

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
)

// tokenGate is a gRPC server interceptor that lets a call through only
// with a bearer token accept takes; it counts calls and refusals.
type tokenGate struct {
	accept            func(token string) bool
	calls, refused    atomic.Int64
	lastCookie        atomic.Value
	lastAuthorization atomic.Value
}

func (g *tokenGate) check(ctx context.Context) error {
	g.calls.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	auth := strings.Join(md.Get("authorization"), ",")
	g.lastAuthorization.Store(auth)
	g.lastCookie.Store(strings.Join(md.Get("cookie"), ","))
	if !g.accept(strings.TrimPrefix(auth, "Bearer ")) {
		g.refused.Add(1)
		return status.Error(codes.Unauthenticated, "invalid token")
	}
	return nil
}

func (g *tokenGate) opts() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := g.check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := g.check(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}

// OAuth 2.0 client credentials over the gRPC binding (A2A 1.0 §10.2): the
// minted token travels as "authorization" metadata, a refused token is
// refreshed once (Unauthenticated), and an agent refusing every token
// gets exactly two calls, then authorization. Before, a minted token went
// only on the HTTP path: a gRPC call carried none.
func TestGRPCOAuth2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	te := newTokenEndpoint(t, ptr(3600))
	newest := func(tok string) bool {
		toks := te.tokens()
		return len(toks) > 1 && tok == toks[len(toks)-1]
	}
	gate := &tokenGate{accept: newest}
	_, iface := grpcAgent(t, claimsagent.Config{}, gate.opts()...)
	secret := oauth2Secret(te.srv.URL + "/token")
	c, err := Dial(ctx, iface, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, secret))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap, err := send(ctx, c)
	if err != nil {
		t.Fatalf("SendMessage() = %v, want success after one refresh", err)
	}
	if te.requests.Load() != 2 || gate.calls.Load() != 2 || gate.refused.Load() != 1 {
		t.Errorf("token requests %d, agent calls %d (refused %d); want 2, 2 (1)", te.requests.Load(), gate.calls.Load(), gate.refused.Load())
	}
	// The next call reuses the token that worked.
	if _, err := c.GetTask(ctx, snap.TaskID, ""); err != nil {
		t.Fatalf("GetTask() = %v", err)
	}
	if te.requests.Load() != 2 {
		t.Errorf("token requests %d after a GetTask, want the cached token reused", te.requests.Load())
	}

	// Every token refused: one refresh, then authorization.
	te2 := newTokenEndpoint(t, ptr(3600))
	none := &tokenGate{accept: func(string) bool { return false }}
	_, iface2 := grpcAgent(t, claimsagent.Config{}, none.opts()...)
	c2, err := Dial(ctx, iface2, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2"}, oauth2Secret(te2.srv.URL+"/token")))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = send(ctx, c2)
	if category(err) != contracts.CategoryAuthorization {
		t.Fatalf("SendMessage() error = %v, want authorization", err)
	}
	if te2.requests.Load() != 2 || none.calls.Load() != 2 {
		t.Errorf("token requests %d, agent calls %d; want 2 and 2 (no loop)", te2.requests.Load(), none.calls.Load())
	}
	for _, tok := range te2.tokens() {
		if strings.Contains(err.Error(), tok) {
			t.Errorf("the error carries a minted token")
		}
	}

	// A card naming another token URL: nothing sent, no token minted.
	te3 := newTokenEndpoint(t, ptr(3600))
	any := &tokenGate{accept: func(string) bool { return true }}
	_, iface3 := grpcAgent(t, claimsagent.Config{}, any.opts()...)
	c3, err := Dial(ctx, iface3, Options{}.WithCredential(&contracts.AuthScheme{Kind: "oauth2", Name: "corp", TokenURL: "https://elsewhere.example/token"}, oauth2Secret(te3.srv.URL+"/token")))
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := send(ctx, c3); category(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), "elsewhere.example") {
		t.Fatalf("SendMessage() error = %v, want authorization naming the card's token URL", err)
	}
	if te3.requests.Load() != 0 || any.calls.Load() != 0 {
		t.Errorf("token requests %d, agent calls %d; want none", te3.requests.Load(), any.calls.Load())
	}
}

// An API key the card puts in a cookie goes as "cookie" metadata over
// gRPC; one it puts in a query parameter cannot go over gRPC and is
// refused before anything is sent.
func TestGRPCAPIKeyCookieAndQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gate := &tokenGate{accept: func(string) bool { return true }}
	_, iface := grpcAgent(t, claimsagent.Config{}, gate.opts()...)
	c, err := Dial(ctx, iface, Options{}.WithCredential(&contracts.AuthScheme{Kind: "api_key", In: "cookie", Param: "k"}, Secret{APIKey: "key-123"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := send(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := gate.lastCookie.Load().(string); got != "k=key-123" {
		t.Errorf("cookie metadata = %q, want k=key-123", got)
	}
	calls := gate.calls.Load()
	q, err := Dial(ctx, iface, Options{}.WithCredential(&contracts.AuthScheme{Kind: "api_key", In: "query", Param: "k", Name: "key"}, Secret{APIKey: "key-123"}))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := send(ctx, q); category(err) != contracts.CategoryAuthorization || !strings.Contains(err.Error(), "cannot carry") {
		t.Fatalf("query key over gRPC: error = %v, want authorization, nothing sent", err)
	}
	if gate.calls.Load() != calls {
		t.Errorf("a call reached the agent")
	}
}
