package a2aclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpcv0 "github.com/a2aproject/a2a-go/v2/a2agrpc/v0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// grpcTransport returns the factory option of the gRPC binding (A2A 1.0
// §10): a2a-go's a2agrpc/v1 transport over a connection made here (for an
// A2A 0.3 interface, A2A 0.3 §3.2.2, its a2agrpc/v0 one).
//
// a2agrpc.WithGRPCTransport would dial the card's url as a gRPC target;
// peers write it in ways gRPC does not read ("grpcs://host:port",
// "https://host"), and the connection must go through the guard's
// dialer, with TLS unless the target is loopback. So the connection is
// made here (cards.ParseGRPCTarget) and handed to
// a2agrpc.NewGRPCTransport; its methods, their protobuf conversions and
// the service parameters as gRPC metadata (A2A 1.0 §10.2: lower-cased
// keys, so "authorization" and "a2a-version") are a2a-go's.
//
// The connection carries the one gRPC seam (grpcSeam), which records
// what a2a-go's error conversion drops: the status code (a2a-go reads an
// Unavailable, an Aborted and a ResourceExhausted all as an internal
// error), whether the request left, and whether the server sent the
// status.
func grpcTransport(iface contracts.Interface, opts Options, maxBytes int64, red *redactor) (sdk.FactoryOption, *grpc.ClientConn, error) {
	t, err := cards.ParseGRPCTarget(iface.URL)
	if err != nil {
		return nil, nil, err
	}
	creds := insecure.NewCredentials()
	if t.TLS {
		var cfg *tls.Config
		if opts.TLSConfig != nil {
			cfg = opts.TLSConfig.Clone()
		} else {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(cfg)
	}
	dial := opts.GRPCDialer
	if dial == nil {
		d := &net.Dialer{Timeout: 5 * time.Second}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	seam := &grpcSeam{red: red}
	msgMax := maxBytes
	if msgMax > 1<<31-1 {
		msgMax = 1<<31 - 1
	}
	// passthrough: the target goes to the dialer as written (host:port),
	// which resolves it and checks every address (the guard); gRPC's own
	// resolver would hand it addresses checked by no one.
	unary, stream := []grpc.UnaryClientInterceptor{seam.unary}, []grpc.StreamClientInterceptor{seam.stream}
	if opts.auth != nil {
		// The credentials the HTTP seam adds (minted tokens, a cookie
		// key), as metadata: outside the seam, which then records the
		// call that went (the retry's, after a refused token).
		origin, err := cards.InterfaceOrigin(iface)
		if err != nil {
			return nil, nil, err
		}
		ga := &grpcAuth{spec: *opts.auth, red: red, origin: origin}
		unary, stream = append([]grpc.UnaryClientInterceptor{ga.unary}, unary...), append([]grpc.StreamClientInterceptor{ga.stream}, stream...)
	}
	conn, err := grpc.NewClient("passthrough:///"+t.Addr(),
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(seam.dialer(dial)),
		grpc.WithStatsHandler(seam),
		grpc.WithChainUnaryInterceptor(unary...),
		grpc.WithChainStreamInterceptor(stream...),
		// The response bound (Options.MaxResponseBytes) holds for every
		// message read, a reply or a stream event: a larger one is refused
		// before it is decoded.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(msgMax))),
		// Headers and trailers (the status, its message and details)
		// are bounded too: gRPC's default lets a server send 16 MiB.
		grpc.WithMaxHeaderListSize(maxGRPCHeaderBytes),
		grpc.WithUserAgent("delegate"),
		// No proxy from the environment, as for HTTP (the guard's client
		// has none): the guard checks the agent's address, not a proxy's.
		grpc.WithNoProxy(),
	)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasPrefix(iface.Version, "0.") {
		// A2A 0.3 over gRPC: a2a-go's a2agrpc/v0 (service a2a.v1.A2AService,
		// the 0.3 a2a.proto: tasks named "tasks/{id}", TaskSubscription).
		return sdk.WithCompatTransport(a2av0.Version, a2a.TransportProtocolGRPC, sdk.TransportFactoryFn(
			func(context.Context, *a2a.AgentCard, *a2a.AgentInterface) (sdk.Transport, error) {
				return a2agrpcv0.NewGRPCTransport(conn), nil
			})), conn, nil
	}
	opt := sdk.WithTransport(a2a.TransportProtocolGRPC, sdk.TransportFactoryFn(
		func(context.Context, *a2a.AgentCard, *a2a.AgentInterface) (sdk.Transport, error) {
			return a2agrpc.NewGRPCTransport(conn), nil
		}))
	return opt, conn, nil
}

// maxGRPCHeaderBytes bounds the headers and the trailers of a gRPC reply
// (the status message and its details among them).
const maxGRPCHeaderBytes = 256 << 10

// grpcSeam is the one seam between a2a-go's gRPC transport and what the
// connection saw: a stats handler (was the request written; did the server
// answer with headers, with a status) and call interceptors (the status
// of a failed call, its message redacted), writing to the call's record.
type grpcSeam struct {
	red *redactor

	mu      sync.Mutex
	dialErr error // the last dial's error (nil after one that worked)
}

func (s *grpcSeam) dialer(dial func(context.Context, string) (net.Conn, error)) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := dial(ctx, addr)
		s.mu.Lock()
		s.dialErr = err
		s.mu.Unlock()
		return c, err
	}
}

func (s *grpcSeam) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	if rec, ok := ctx.Value(recordKey{}).(*record); ok {
		rec.mu.Lock()
		rec.grpc = true
		rec.mu.Unlock()
	}
	return ctx
}

func (s *grpcSeam) HandleRPC(ctx context.Context, st stats.RPCStats) {
	rec, ok := ctx.Value(recordKey{}).(*record)
	if !ok {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch st.(type) {
	case *stats.OutPayload:
		// The request message was handed to the connection: the call may
		// take effect whatever happens next.
		rec.written = true
	case *stats.InHeader:
		rec.grpcHeader = true
	case *stats.InTrailer:
		// The server ended the call with its own status (A2A 1.0 §10.6).
		rec.grpcTrailer = true
	}
}

func (s *grpcSeam) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (s *grpcSeam) HandleConn(context.Context, stats.ConnStats)                       {}

// note records the status of a failed call.
func (s *grpcSeam) note(ctx context.Context, err error) {
	rec, ok := ctx.Value(recordKey{}).(*record)
	if !ok || err == nil {
		return
	}
	st := status.Convert(err)
	s.mu.Lock()
	dialErr := s.dialErr
	s.mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.grpc, rec.grpcFailed = true, true
	rec.grpcCode = st.Code()
	rec.grpcMessage = contracts.CutText(s.red.text(st.Message()), 1024)
	if st.Code() == codes.Unavailable {
		rec.dialErr = dialErr
	}
}

func (s *grpcSeam) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	s.note(ctx, err)
	return err
}

func (s *grpcSeam) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		s.note(ctx, err)
		return nil, err
	}
	return &notedStream{ClientStream: cs, seam: s, ctx: ctx}, nil
}

// notedStream records the status a stream ends with.
type notedStream struct {
	grpc.ClientStream
	seam *grpcSeam
	ctx  context.Context
}

func (n *notedStream) RecvMsg(m any) error {
	err := n.ClientStream.RecvMsg(m)
	if err != nil && !errors.Is(err, io.EOF) {
		n.seam.note(n.ctx, err)
	}
	return err
}

// grpcTooLarge is how grpc-go words its own refusal of a message over
// MaxCallRecvMsgSize (ResourceExhausted, made by the client, not sent).
const grpcTooLarge = "grpc: received message larger than max"

// classifyGRPC sets the category of a failed call over the gRPC binding
// (A2A 1.0 §10.6: the status code, and for A2A errors a google.rpc
// ErrorInfo that a2a-go reads into its a2a errors), in this order:
//
//   - the call succeeded but a2a-go could not read its reply: for a send
//     unknown_outcome (the agent took the message), else protocol;
//   - the guard refused the address (card);
//   - Unauthenticated, PermissionDenied: authorization;
//   - a reply over the response bound (grpc-go refuses it before decoding;
//     ErrResponseTooLarge): for a send unknown_outcome (the request left
//     and was answered), else protocol;
//   - a status the server sent (trailers): Unavailable, ResourceExhausted
//     (a quota), Aborted (a conflict), DeadlineExceeded (the server's own
//     deadline), Internal and Unknown (its failures, as JSON-RPC -32603
//     and HTTP 5xx are): transient; Canceled: transient for a read, an
//     unknown outcome for anything else (the server gave up mid-call);
//     every other code (InvalidArgument, NotFound, FailedPrecondition,
//     Unimplemented, AlreadyExists, OutOfRange, DataLoss, a code outside
//     the enum): protocol, the same call would fail again;
//   - a status made by the client before the request was written, other
//     than Unavailable, DeadlineExceeded or Canceled (metadata gRPC cannot
//     send, say an API-key header name with a space): protocol;
//   - any other status made by the client (dial failure, timeout, cancel,
//     a reset mid-reply, a dropped connection): transient when the request
//     was not written (nothing left) or for a read (GetTask,
//     SubscribeToTask), otherwise unknown_outcome (the unknown-outcome
//     rule: it may have taken effect).
func classifyGRPC(op string, ce *CallError, rec *record) {
	rec.mu.Lock()
	failed, code, msg := rec.grpcFailed, rec.grpcCode, rec.grpcMessage
	trailer, dialErr := rec.grpcTrailer, rec.dialErr
	rec.mu.Unlock()
	if !failed {
		if op == "SendMessage" {
			ce.Category = contracts.CategoryUnknownOutcome
		} else {
			ce.Category = contracts.CategoryProtocol
		}
		return
	}
	ce.HasGRPCCode, ce.GRPCCode, ce.Message = true, int(code), msg
	switch {
	case errors.Is(dialErr, cards.ErrGuard) && !ce.Written:
		ce.Category = contracts.CategoryCard
		ce.Err = fmt.Errorf("%w (%v)", dialErr, ce.Err)
	case code == codes.Unauthenticated || code == codes.PermissionDenied:
		ce.Category = contracts.CategoryAuthorization
	case code == codes.ResourceExhausted && !trailer && strings.HasPrefix(msg, grpcTooLarge):
		ce.Err = fmt.Errorf("%w: %s", ErrResponseTooLarge, msg)
		if op == "SendMessage" {
			ce.Category = contracts.CategoryUnknownOutcome
		} else {
			ce.Category = contracts.CategoryProtocol
		}
	case trailer:
		switch code {
		case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded, codes.Internal, codes.Unknown:
			ce.Category = contracts.CategoryTransient
		case codes.Canceled:
			if op == "GetTask" || !ce.Written {
				ce.Category = contracts.CategoryTransient
			} else {
				ce.Category = contracts.CategoryUnknownOutcome
			}
		default:
			ce.Category = contracts.CategoryProtocol
		}
	case code != codes.Unavailable && code != codes.DeadlineExceeded && code != codes.Canceled && !ce.Written:
		// Refused by this client before anything left (metadata it cannot
		// send, a request it cannot encode): the same call fails again.
		ce.Category = contracts.CategoryProtocol
	case !ce.Written, op == "GetTask", op == "SubscribeToTask":
		// Nothing left, or a read (a stream too: it changes nothing).
		ce.Category = contracts.CategoryTransient
	default:
		ce.Category = contracts.CategoryUnknownOutcome
	}
}
