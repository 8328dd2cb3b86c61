package a2aclient

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2adelegate/delegate/contracts"
)

// grpcAuth is authTransport for the gRPC binding (A2A 1.0 §10.2: the
// credential travels as metadata, lower-cased keys): a bearer token
// minted at call time with the client credentials grant (RFC 6749 §4.4)
// in "authorization", an API key of a cookie scheme in "cookie" (A2A 1.0
// §4.5.2); the card's token URL or issuer compared with the store's first
// (authSpec.check), nothing sent on a mismatch. A unary call the server
// refuses with Unauthenticated or PermissionDenied is made once more with
// a fresh token, and its second answer stands; a stream is opened with
// the current token (a stream refused is read again by GetTask, which
// refreshes). Every token is registered with the client's redactor
// before it is sent. Bearer tokens and header keys of the store travel by
// a2a-go's call interceptor (service parameters), as over HTTP.
type grpcAuth struct {
	spec   authSpec
	red    *redactor
	origin string // the interface's origin: the token cache's key
}

// outgoing returns ctx with the credential's metadata: token, or (when
// "") the cached or a newly minted token, with what a refresh needs.
func (g *grpcAuth) outgoing(ctx context.Context, token string) (context.Context, *minted, error) {
	if err := g.spec.check(); err != nil {
		return ctx, nil, err
	}
	var m *minted
	if g.spec.tokens != nil {
		if token == "" {
			tok, mt, err := g.spec.token(g.origin, g.red)
			if err != nil {
				return ctx, nil, err
			}
			token, m = tok, &mt
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	if g.spec.secret.APIKey != "" && g.spec.scheme.Kind == "api_key" {
		switch g.spec.scheme.In {
		case "query":
			return ctx, nil, authErrorf(contracts.CategoryAuthorization,
				"the card's API key scheme %q puts the key in query parameter %q, which the gRPC binding (A2A 1.0 §10) cannot carry: nothing was sent",
				g.spec.scheme.Name, g.spec.scheme.Param)
		case "cookie":
			c, err := g.spec.keyCookie()
			if err != nil {
				return ctx, nil, err
			}
			ctx = metadata.AppendToOutgoingContext(ctx, "cookie", c.String())
		}
	}
	return ctx, m, nil
}

func (g *grpcAuth) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	out, m, err := g.outgoing(ctx, "")
	if err != nil {
		return err
	}
	err = invoker(out, method, req, reply, cc, opts...)
	if m == nil {
		return err
	}
	if c := status.Code(err); c != codes.Unauthenticated && c != codes.PermissionDenied {
		return err
	}
	// Refused: once more with a fresh token. The refused call took no
	// effect; what the record says is the retry's.
	if rec, ok := ctx.Value(recordKey{}).(*record); ok {
		rec.mu.Lock()
		rec.written, rec.grpcHeader, rec.grpcTrailer, rec.grpcFailed = false, false, false, false
		rec.mu.Unlock()
	}
	tok, err := m.refresh(g.red)
	if err != nil {
		return err
	}
	if out, _, err = g.outgoing(ctx, tok); err != nil {
		return err
	}
	return invoker(out, method, req, reply, cc, opts...)
}

func (g *grpcAuth) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	out, _, err := g.outgoing(ctx, "")
	if err != nil {
		return nil, err
	}
	return streamer(out, desc, cc, method, opts...)
}
