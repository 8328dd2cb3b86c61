package a2aclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/internal/claimsagent"
	"github.com/a2adelegate/delegate/internal/testcerts"
)

// seenMD records the metadata of every call a gRPC server received.
type seenMD struct {
	mu      sync.Mutex
	mds     []metadata.MD
	methods []string
}

func (s *seenMD) opts() []grpc.ServerOption {
	note := func(ctx context.Context, method string) {
		md, _ := metadata.FromIncomingContext(ctx)
		s.mu.Lock()
		s.mds = append(s.mds, md.Copy())
		s.methods = append(s.methods, method)
		s.mu.Unlock()
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			note(ctx, info.FullMethod)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			note(ss.Context(), info.FullMethod)
			return h(srv, ss)
		}),
	}
}

func (s *seenMD) all() []metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metadata.MD(nil), s.mds...)
}

// grpcAgent serves the claims agent's A2AService (a2a-go's a2agrpc/v1
// handler over the agent's a2asrv handler) on a loopback port chosen now;
// it returns the agent and its gRPC interface.
func grpcAgent(t *testing.T, cfg claimsagent.Config, opts ...grpc.ServerOption) (*claimsagent.Agent, contracts.Interface) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.GRPCURL = ln.Addr().String()
	agent := claimsagent.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = agent.ServeGRPC(ctx, ln, opts...) }()
	t.Cleanup(func() { cancel(); <-done })
	return agent, contracts.Interface{URL: cfg.GRPCURL, Binding: "GRPC", Version: "1.0"}
}

// waitState reads the task until it is in want, or fails at the deadline.
func waitState(t *testing.T, ctx context.Context, c *Client, taskID string, want contracts.TaskState) contracts.TaskSnapshot {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap, err := c.GetTask(ctx, taskID, "")
		if err == nil && snap.State == want {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: not %s within 10 s (last %+v, %v)", taskID, want, snap, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The claims agent over gRPC (A2A 1.0 §10, and A2A 0.3 through
// a2agrpc/v0): send, get, cancel, an input-required round answered on the
// same task, a subscription; the credential and A2A-Version travel as
// lower-cased metadata (§10.2).
func TestGRPCAgainstClaimsAgent(t *testing.T) {
	for _, version := range []string{"1.0", "0.3"} {
		t.Run(version, func(t *testing.T) { testGRPCAgainstClaimsAgent(t, version) })
	}
}

func testGRPCAgainstClaimsAgent(t *testing.T, version string) {
	const token = "grpc-bearer-7f3a9c"
	md := &seenMD{}
	agent, iface := grpcAgent(t, claimsagent.Config{RequireBearer: token, WorkDelay: 100 * time.Millisecond}, md.opts()...)
	iface.Version = version
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Without the credential: Unauthenticated, "authorization".
	anon, err := Dial(ctx, iface, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	_, err = anon.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m-anon", Text: "order Z-1 lost"})
	var ce *CallError
	if !errors.As(err, &ce) || ce.Category != contracts.CategoryAuthorization || !ce.HasGRPCCode || codes.Code(ce.GRPCCode) != codes.Unauthenticated {
		t.Fatalf("SendMessage(no credential) error = %v, want authorization (Unauthenticated)", err)
	}
	if agent.Unauthorized.Load() == 0 {
		t.Errorf("the agent counted no refused call")
	}

	c, err := Dial(ctx, iface, Options{}.WithCredential(nil, Secret{Bearer: token}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Interface().Binding != "GRPC" {
		t.Errorf("Interface() = %+v", c.Interface())
	}

	// send, get, cancel
	snap, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m-slow", Text: "order Z-9 lost", Data: []byte(`{"scenario":"slow"}`)})
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	if snap.TaskID == "" || snap.State.Terminal() {
		t.Fatalf("SendMessage() = %+v, want a running task", snap)
	}
	if got, err := c.GetTask(ctx, snap.TaskID, snap.ContextID); err != nil || got.TaskID != snap.TaskID {
		t.Fatalf("GetTask() = %+v, %v", got, err)
	}
	canceled, err := c.CancelTask(ctx, snap.TaskID, snap.ContextID)
	if err != nil || canceled.State != contracts.TaskStateCanceled {
		t.Fatalf("CancelTask() = %+v, %v", canceled, err)
	}
	_, err = c.GetTask(ctx, "no-such-task", "")
	if !errors.As(err, &ce) || ce.Category != contracts.CategoryProtocol || !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask(unknown) error = %v, want protocol, TaskNotFound", err)
	}

	// An input-required round, followed by a stream, answered on the same
	// task, which then completes with its artifact.
	first, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m-lost", Text: "My parcel for order A-1001 never arrived.", Data: []byte(`{"order_id":"A-1001"}`)})
	if err != nil {
		t.Fatalf("SendMessage(lost parcel) error = %v", err)
	}
	var states []contracts.TaskState
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	for ev, err := range c.SubscribeStates(sctx, first.TaskID) {
		if err != nil {
			t.Fatalf("SubscribeStates() error = %v (states %v)", err, states)
		}
		if ev.State != "" {
			states = append(states, ev.State)
		}
		if ev.State == contracts.TaskStateInputRequired {
			break
		}
	}
	scancel()
	if len(states) == 0 || states[len(states)-1] != contracts.TaskStateInputRequired {
		t.Fatalf("stream states = %v, want input-required at the end", states)
	}
	asked := waitState(t, ctx, c, first.TaskID, contracts.TaskStateInputRequired)
	if asked.StatusText != claimsagent.Question {
		t.Errorf("question = %q, want %q", asked.StatusText, claimsagent.Question)
	}
	follow, err := c.SendMessage(ctx, contracts.OutboundMessage{MessageID: "m-photo", TaskID: first.TaskID, ContextID: first.ContextID, Text: "photo: box.jpg"})
	if err != nil || follow.TaskID != first.TaskID {
		t.Fatalf("SendMessage(follow-up) = %+v, %v; want task %s", follow, err, first.TaskID)
	}
	done := waitState(t, ctx, c, first.TaskID, contracts.TaskStateCompleted)
	if len(done.Artifacts) != 1 || done.Artifacts[0].Name != "claim_opened" {
		t.Errorf("completed task artifacts = %+v, want one claim_opened", done.Artifacts)
	}

	// What the server received: the credential and the version as
	// lower-cased metadata on every authenticated call.
	var authed int
	for _, m := range md.all() {
		if v := m.Get("authorization"); len(v) == 1 && v[0] == "Bearer "+token {
			authed++
			if got := m.Get("a2a-version"); version == "1.0" && (len(got) != 1 || got[0] != "1.0") {
				t.Errorf("a2a-version metadata = %v, want [1.0] (A2A 1.0 §10.2)", got)
			}
		}
	}
	service := map[string]string{"1.0": "/lf.a2a.v1.A2AService/", "0.3": "/a2a.v1.A2AService/"}[version]
	md.mu.Lock()
	for _, m := range md.methods {
		if !strings.HasPrefix(m, service) {
			t.Errorf("a call to %s, want every call to %s (A2A %s)", m, service, version)
		}
	}
	md.mu.Unlock()
	if authed < 6 {
		t.Errorf("%d calls carried authorization metadata, want every call of the authenticated client (>= 6)", authed)
	}
}

// hostile is a hand-written A2AService that misbehaves on purpose.
type hostile struct {
	a2apb.UnimplementedA2AServiceServer
	// answer makes the reply or the error of SendMessage and GetTask.
	answer func(ctx context.Context) (*a2apb.Task, error)
	// stream runs after SubscribeToTask sent its first event.
	stream func(ctx context.Context) error
}

func (h *hostile) SendMessage(ctx context.Context, _ *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	t, err := h.answer(ctx)
	if err != nil {
		return nil, err
	}
	return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: t}}, nil
}

func (h *hostile) GetTask(ctx context.Context, _ *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	return h.answer(ctx)
}

// SubscribeToTask sends the task once, then runs stream (when set).
func (h *hostile) SubscribeToTask(_ *a2apb.SubscribeToTaskRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	if err := ss.Send(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: task("streaming")}}); err != nil {
		return err
	}
	if h.stream != nil {
		return h.stream(ss.Context())
	}
	return nil
}

// trackingListener keeps the connections it accepted, so that a test can
// cut them mid-call.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *trackingListener) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

func serveHostile(t *testing.T, h *hostile) (contracts.Interface, *trackingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := &trackingListener{Listener: ln}
	s := grpc.NewServer()
	a2apb.RegisterA2AServiceServer(s, h)
	go func() { _ = s.Serve(tl) }()
	t.Cleanup(s.Stop)
	return contracts.Interface{URL: "grpc://" + ln.Addr().String(), Binding: "GRPC", Version: "1.0"}, tl
}

func task(text string) *a2apb.Task {
	return &a2apb.Task{Id: "t-1", ContextId: "c-1", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_WORKING,
		Message: &a2apb.Message{MessageId: "s-1", Role: a2apb.Role_ROLE_AGENT, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}}}}}
}

func wantCategory(t *testing.T, what string, err error, want contracts.Category) *CallError {
	t.Helper()
	var ce *CallError
	if !errors.As(err, &ce) || ce.Category != want {
		t.Errorf("%s: error = %v, want category %s", what, err, want)
		return &CallError{}
	}
	return ce
}

// Hostile gRPC servers: every misbehaviour ends in its category, and the
// unknown-outcome rule holds (a send that fails after its request left).
func TestGRPCHostileServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msg := contracts.OutboundMessage{MessageID: "m-1", Text: "order Z-1 lost"}

	t.Run("100 MB reply", func(t *testing.T) {
		huge := task(strings.Repeat("x", 100<<20))
		iface, _ := serveHostile(t, &hostile{answer: func(context.Context) (*a2apb.Task, error) { return huge, nil }})
		c, err := Dial(ctx, iface, Options{MaxResponseBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.GetTask(ctx, "t-1", "")
		wantCategory(t, "GetTask", err, contracts.CategoryProtocol)
		if !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("GetTask error = %v, want ErrResponseTooLarge", err)
		}
		_, err = c.SendMessage(ctx, msg)
		if ce := wantCategory(t, "SendMessage", err, contracts.CategoryUnknownOutcome); !ce.Written {
			t.Errorf("SendMessage: Written = false, want true (the request left)")
		}
		if !errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("SendMessage error = %v, want ErrResponseTooLarge", err)
		}
	})

	t.Run("1 MB status message", func(t *testing.T) {
		iface, _ := serveHostile(t, &hostile{answer: func(context.Context) (*a2apb.Task, error) {
			return nil, status.Error(codes.InvalidArgument, strings.Repeat("z", 1<<20))
		}})
		c, err := Dial(ctx, iface, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.GetTask(ctx, "t-1", "")
		ce := wantCategory(t, "GetTask", err, contracts.CategoryTransient)
		if strings.Contains(err.Error(), strings.Repeat("z", 1000)) || len(ce.Message) > 1024 {
			t.Errorf("error (%d bytes) carries the oversized status message", len(err.Error()))
		}
	})

	t.Run("never answers", func(t *testing.T) {
		iface, _ := serveHostile(t, &hostile{answer: func(ctx context.Context) (*a2apb.Task, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		c, err := Dial(ctx, iface, Options{CallTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		_, err = c.GetTask(ctx, "t-1", "")
		wantCategory(t, "GetTask", err, contracts.CategoryTransient)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("GetTask took %s, want the call timeout", d)
		}
		sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer scancel()
		_, err = c.SendMessage(sctx, msg)
		if ce := wantCategory(t, "SendMessage", err, contracts.CategoryUnknownOutcome); !ce.Written {
			t.Errorf("SendMessage: Written = false, want true")
		}
	})

	t.Run("cut mid-call", func(t *testing.T) {
		var tl *trackingListener
		var iface contracts.Interface
		iface, tl = serveHostile(t, &hostile{answer: func(ctx context.Context) (*a2apb.Task, error) {
			tl.cut()
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		c, err := Dial(ctx, iface, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.SendMessage(ctx, msg)
		wantCategory(t, "SendMessage", err, contracts.CategoryUnknownOutcome)
		_, err = c.GetTask(ctx, "t-1", "")
		wantCategory(t, "GetTask", err, contracts.CategoryTransient)
	})

	t.Run("stream cut after an event", func(t *testing.T) {
		var tl *trackingListener
		var iface contracts.Interface
		got := make(chan struct{}) // closed when the client has the first event
		iface, tl = serveHostile(t, &hostile{
			answer: func(context.Context) (*a2apb.Task, error) { return task("x"), nil },
			stream: func(ctx context.Context) error {
				select {
				case <-got:
				case <-ctx.Done():
					return ctx.Err()
				}
				tl.cut()
				<-ctx.Done()
				return ctx.Err()
			}})
		c, err := Dial(ctx, iface, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var events int
		var last error
		for ev, err := range c.SubscribeStates(ctx, "t-1") {
			if err != nil {
				last = err
				break
			}
			if ev.State == contracts.TaskStateWorking {
				if events++; events == 1 {
					close(got)
				}
			}
		}
		if events != 1 {
			t.Errorf("%d working events before the cut, want 1", events)
		}
		// A stream is a read: the task is read again.
		wantCategory(t, "SubscribeToTask", last, contracts.CategoryTransient)
	})

	for _, tc := range []struct {
		name string
		err  error
		want contracts.Category
	}{
		{"unknown status code", status.Error(codes.Code(99), "what is this"), contracts.CategoryProtocol},
		{"Unauthenticated", status.Error(codes.Unauthenticated, "who are you"), contracts.CategoryAuthorization},
		{"PermissionDenied", status.Error(codes.PermissionDenied, "not you"), contracts.CategoryAuthorization},
		{"Unavailable", status.Error(codes.Unavailable, "overloaded"), contracts.CategoryTransient},
		{"ResourceExhausted", status.Error(codes.ResourceExhausted, "quota"), contracts.CategoryTransient},
		{"Aborted", status.Error(codes.Aborted, "conflict"), contracts.CategoryTransient},
		{"Unimplemented", status.Error(codes.Unimplemented, "no"), contracts.CategoryProtocol},
		{"InvalidArgument", status.Error(codes.InvalidArgument, "bad"), contracts.CategoryProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iface, _ := serveHostile(t, &hostile{answer: func(context.Context) (*a2apb.Task, error) { return nil, tc.err }})
			c, err := Dial(ctx, iface, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.SendMessage(ctx, msg)
			ce := wantCategory(t, "SendMessage", err, tc.want)
			if want := status.Code(tc.err); !ce.HasGRPCCode || codes.Code(ce.GRPCCode) != want {
				t.Errorf("GRPCCode = %v (has %v), want %v", codes.Code(ce.GRPCCode), ce.HasGRPCCode, want)
			}
			_, err = c.GetTask(ctx, "t-1", "")
			wantCategory(t, "GetTask", err, tc.want)
		})
	}

	t.Run("echoes the bearer token", func(t *testing.T) {
		const token = "echo-me-secret-41c7"
		iface, _ := serveHostile(t, &hostile{answer: func(ctx context.Context) (*a2apb.Task, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			return nil, status.Errorf(codes.InvalidArgument, "refused %v", md.Get("authorization"))
		}})
		c, err := Dial(ctx, iface, Options{}.WithCredential(nil, Secret{Bearer: token}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.SendMessage(ctx, msg)
		ce := wantCategory(t, "SendMessage", err, contracts.CategoryProtocol)
		if strings.Contains(err.Error(), token) || strings.Contains(ce.Message, token) {
			t.Errorf("the token came back: %q / %q", err.Error(), ce.Message)
		}
		if !strings.Contains(err.Error(), Redacted) {
			t.Errorf("error = %q, want %s in the place of the token", err.Error(), Redacted)
		}
	})

	t.Run("echoes the bearer token in a reply", func(t *testing.T) {
		const token = "echo-me-reply-9b2d"
		iface, _ := serveHostile(t, &hostile{answer: func(ctx context.Context) (*a2apb.Task, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			return task("your header was " + strings.Join(md.Get("authorization"), ",")), nil
		}})
		c, err := Dial(ctx, iface, Options{}.WithCredential(nil, Secret{Bearer: token}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		snap, err := c.GetTask(ctx, "t-1", "")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(snap.StatusText, token) || !strings.Contains(snap.StatusText, Redacted) {
			t.Errorf("status text = %q, want the token redacted", snap.StatusText)
		}
	})

	t.Run("metadata gRPC cannot send", func(t *testing.T) {
		iface, _ := serveHostile(t, &hostile{answer: func(context.Context) (*a2apb.Task, error) { return task("x"), nil }})
		c, err := Dial(ctx, iface, Options{}.WithCredential(&contracts.AuthScheme{Kind: "api_key", Header: "X Api Key"}, Secret{APIKey: "k-12345678"}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.SendMessage(ctx, msg)
		// Refused before anything left, and refused again on every retry.
		if ce := wantCategory(t, "SendMessage", err, contracts.CategoryProtocol); ce.Written {
			t.Errorf("Written = true, want false")
		}
	})

	t.Run("nothing listens", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, err := Dial(ctx, contracts.Interface{URL: addr, Binding: "GRPC", Version: "1.0"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.SendMessage(ctx, msg)
		if ce := wantCategory(t, "SendMessage", err, contracts.CategoryTransient); ce.Written {
			t.Errorf("SendMessage: Written = true, want false (nothing was sent)")
		}
	})

	t.Run("guard refuses the address", func(t *testing.T) {
		// A card naming an internal address: the guard's dialer refuses it
		// before connecting; nothing is sent.
		c, err := Dial(ctx, contracts.Interface{URL: "grpc://10.20.30.40:50051", Binding: "GRPC", Version: "1.0"},
			Options{GRPCDialer: (&cards.Guard{}).Dialer("http://10.20.30.40:50051")})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.SendMessage(ctx, msg)
		wantCategory(t, "SendMessage", err, contracts.CategoryCard)
		if !errors.Is(err, cards.ErrGuard) {
			t.Errorf("error = %v, want ErrGuard", err)
		}
	})
}

// A reply under the response bound passes, even over gRPC's own 4 MB
// default: the bound is Options.MaxResponseBytes (8 MiB by default).
func TestGRPCReplyUnderTheBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big := task(strings.Repeat("y", 6<<20))
	iface, _ := serveHostile(t, &hostile{answer: func(context.Context) (*a2apb.Task, error) { return big, nil }})
	c, err := Dial(ctx, iface, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap, err := c.GetTask(ctx, "t-1", "")
	if err != nil || len(snap.StatusText) != 6<<20 {
		t.Fatalf("GetTask(6 MB) = %d bytes, %v; want the whole reply", len(snap.StatusText), err)
	}
}

// TLS: a grpcs:// target is dialed with TLS, verified against
// Options.TLSConfig's roots (nil: the system roots, which do not know the
// test CA); a plaintext client does not reach a TLS server.
func TestGRPCTLS(t *testing.T) {
	files, err := testcerts.Make(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.ServerCert, files.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	a2apb.RegisterA2AServiceServer(s, &hostile{answer: func(context.Context) (*a2apb.Task, error) { return task("over TLS"), nil }})
	go func() { _ = s.Serve(ln) }()
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	iface := contracts.Interface{URL: "grpcs://" + ln.Addr().String(), Binding: "GRPC", Version: "1.0"}
	c, err := Dial(ctx, iface, Options{TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if snap, err := c.GetTask(ctx, "t-1", ""); err != nil || snap.StatusText != "over TLS" {
		t.Fatalf("GetTask(TLS, test CA) = %+v, %v", snap, err)
	}

	sys, err := Dial(ctx, iface, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	_, err = sys.GetTask(ctx, "t-1", "")
	if ce := wantCategory(t, "GetTask(system roots)", err, contracts.CategoryTransient); ce.Written {
		t.Errorf("Written = true for a handshake that failed")
	}

	plain, err := Dial(ctx, contracts.Interface{URL: ln.Addr().String(), Binding: "GRPC", Version: "1.0"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.GetTask(ctx, "t-1", ""); err == nil {
		t.Errorf("GetTask(plaintext to a TLS server) error = nil, want a failure")
	}
}
