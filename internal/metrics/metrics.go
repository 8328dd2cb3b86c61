package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	sdkclient "go.temporal.io/sdk/client"
)

// Serve starts a Prometheus endpoint at addr (path /metrics) and returns
// the handler to give to client.Options.MetricsHandler and the address it
// listens on. It stops when ctx ends.
func Serve(ctx context.Context, addr string) (sdkclient.MetricsHandler, string, error) {
	reporter := tallyprom.NewReporter(tallyprom.Options{})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter: reporter, Separator: tallyprom.DefaultSeparator,
		SanitizeOptions: &tallyprom.DefaultSanitizerOpts,
	}, time.Second)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = closer.Close()
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", reporter.HTTPHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
		_ = closer.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	return handler{scope}, ln.Addr().String(), nil
}

// handler adapts a tally scope to the SDK's metrics handler.
type handler struct{ scope tally.Scope }

func (h handler) WithTags(tags map[string]string) sdkclient.MetricsHandler {
	return handler{h.scope.Tagged(tags)}
}

func (h handler) Counter(name string) sdkclient.MetricsCounter { return h.scope.Counter(name) }
func (h handler) Gauge(name string) sdkclient.MetricsGauge     { return h.scope.Gauge(name) }
func (h handler) Timer(name string) sdkclient.MetricsTimer     { return timer{h.scope.Timer(name)} }

type timer struct{ t tally.Timer }

func (t timer) Record(d time.Duration) { t.t.Record(d) }
