package activities

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/a2adelegate/delegate/a2aclient"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
	"github.com/a2adelegate/delegate/push"
)

// Activities carries the worker-side dependencies of the activities.
// Register a *Activities with the worker; the zero value works.
type Activities struct {
	// Fetcher fetches Agent Cards; nil means a default cards.Fetcher.
	Fetcher *cards.Fetcher
	// DialOptions are used for every a2aclient.Dial.
	DialOptions a2aclient.Options
	// PollInitial and PollMax bound the GetTask polling backoff of WatchTask
	// (defaults 1 s and 30 s; each wait doubles up to PollMax).
	PollInitial, PollMax time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Policy is the authorization policy file (nil or no path: allow all).
	Policy *PolicyFile
	// Credentials is the worker's credential store (nil: none).
	Credentials *a2aclient.Credentials
	// Temporal is a client for ReconcileOpen (nil: reconciliation by
	// schedule is unavailable).
	Temporal client.Client
	// SettleWindow is how long SendMessage reads a task that is still
	// submitted or working before returning it (default 250 ms; negative:
	// none).
	SettleWindow time.Duration
	// SendTimeout bounds one SendMessage call (default 30 s). A call that
	// times out after its request was written has an unknown outcome.
	SendTimeout time.Duration
	// Push, when set, is where the agents of cards that declare
	// pushNotifications push their tasks' changes (a `delegate webhook`),
	// and the key the tokens are derived with (package push).
	Push *push.Settings
	// StreamIdle is how long a SubscribeToTask stream may stay without an
	// event before it is closed and the task read with GetTask (default
	// DefaultStreamIdle).
	StreamIdle time.Duration
	// Observer, when set, is told of every call to an agent, token
	// request and card verification (package internal/metrics); the
	// calls' clients get it unless DialOptions.Observer is set.
	Observer Observer

	once sync.Once
}

func (a *Activities) fetcher() *cards.Fetcher {
	a.once.Do(func() {
		if a.Fetcher == nil {
			a.Fetcher = &cards.Fetcher{}
		}
	})
	return a.Fetcher
}

// dial makes a client for an interface whose HTTP connections obey the
// guard of the card's origin (unless DialOptions.HTTPClient is set), with
// the credential of the interface's origin from the worker's store, or the
// one named by credentialRef (an operator's answer to AUTH_REQUIRED). A
// credential with tls makes the connections present its client
// certificate (A2A 1.0 §4.5.6), and sets Options.TLSConfig.
func (a *Activities) dial(ctx context.Context, iface contracts.Interface, credentialRef string, lim contracts.Limits) (*a2aclient.Client, error) {
	opts := a.DialOptions
	if opts.Observer == nil && a.Observer != nil {
		opts.Observer = a.Observer
	}
	if m := int64(lim.WithDefaults().MaxResponseBytes); opts.MaxResponseBytes <= 0 || m < opts.MaxResponseBytes {
		opts.MaxResponseBytes = m
	}
	var secret a2aclient.Secret
	has := false
	if credentialRef != "" {
		// The secret goes only to an origin the ref is bound to: the
		// interface's URL, which the card on that origin named.
		origin, err := cards.InterfaceOrigin(iface)
		if err != nil {
			return nil, &refError{err: fmt.Errorf("%w: %v", a2aclient.ErrRefNotAllowed, err)}
		}
		if secret, err = a.Credentials.ForRef(credentialRef, origin); err != nil {
			return nil, &refError{err: err}
		}
		has = true
	} else if origin, err := cards.InterfaceOrigin(iface); err == nil {
		secret, has = a.Credentials.ForOrigin(origin)
		if !has && iface.Auth != nil {
			opts.NoCredential = noCredential(iface, origin)
		}
	}
	tlsConf, _ := secret.TLSConfig()
	if opts.HTTPClient == nil {
		opts.HTTPClient = a.fetcher().ClientTLS(iface.CardOrigin, time.Minute, tlsConf)
	}
	if opts.GRPCDialer == nil { // the same guard for a gRPC interface
		opts.GRPCDialer = a.fetcher().Guard().Dialer(iface.CardOrigin)
	}
	if tlsConf != nil {
		opts.TLSConfig = tlsConf
	}
	if has {
		opts = opts.WithCredential(iface.Auth, secret)
	}
	return a2aclient.Dial(ctx, iface, opts)
}

// noCredential says, for an authorization error, that the card asks for a
// credential and none went: the store has no entry for the interface's
// origin (which, for a gRPC interface or an interface on another host, is
// not the card's).
func noCredential(iface contracts.Interface, origin string) string {
	what := "the card asks for " + iface.Auth.Kind
	if iface.Auth.Name != "" {
		what += fmt.Sprintf(" (scheme %q)", iface.Auth.Name)
	}
	where := fmt.Sprintf("origin %s", origin)
	if iface.CardOrigin != "" && iface.CardOrigin != origin {
		where += fmt.Sprintf(" (the %s interface's origin; the card's is %s)", iface.Binding, iface.CardOrigin)
	}
	return fmt.Sprintf("the worker sent no credential: %s and its credential store (--credentials, read at start) has no entry for %s", what, where)
}

func (a *Activities) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func workflowID(ctx context.Context) (id string) {
	defer func() {
		if recover() != nil {
			id = ""
		}
	}()
	return activity.GetInfo(ctx).WorkflowExecution.ID
}
