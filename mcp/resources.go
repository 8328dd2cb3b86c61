package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/a2adelegate/delegate/client"
	"github.com/a2adelegate/delegate/contracts"
)

// ResourceScheme is the scheme of a delegation's resource URI:
// "delegation://" + its local_workflow_id. Reading it gives the Result a
// delegation_status call would (as JSON, without elicitation); a client
// that subscribes is sent notifications/resources/updated when its
// a2a_state, question or outcome changes. resources/list lists the
// actor's newest 100 delegations (listResources).
const ResourceScheme = "delegation://"

// watchEvery is how often a subscribed delegation's state is read.
var watchEvery = 2 * time.Second

// watcher serves the delegation resources of one go-sdk server and
// follows the subscribed ones.
type watcher struct {
	s   *Server
	srv *sdk.Server

	mu      sync.Mutex
	watched map[string]*watch // by URI
	running bool
}

type watch struct {
	// sessions are the sessions subscribed to it: an unsubscribe removes
	// its own session only (the go-sdk calls the handler for any session,
	// subscribed or not, another actor's too).
	sessions map[*sdk.ServerSession]bool
	last     string
	// owner is the actor whose delegation it is (Options.MaxWatchedPerActor).
	owner string
}

func newWatcher(s *Server) *watcher { return &watcher{s: s, watched: map[string]*watch{}} }

// actorOf is the actor of a resource request (the stdio server's, or the
// bearer token's).
func (w *watcher) actorOf(extra *sdk.RequestExtra) string {
	if w.s.o.Actor != "" {
		return w.s.o.Actor
	}
	if extra != nil && extra.TokenInfo != nil {
		return extra.TokenInfo.UserID
	}
	return ""
}

// owned returns the id of uri when the actor started that delegation,
// else the go-sdk's "resource not found" (the same for another's).
func (w *watcher) owned(ctx context.Context, uri string, extra *sdk.RequestExtra) (string, error) {
	id, ok := strings.CutPrefix(uri, ResourceScheme)
	actor := w.actorOf(extra)
	if !ok || actor == "" {
		return "", sdk.ResourceNotFoundError(uri)
	}
	if res, err := w.s.own(ctx, id, actor); err != nil {
		return "", err
	} else if res != nil {
		return "", sdk.ResourceNotFoundError(uri)
	}
	return id, nil
}

func (w *watcher) read(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	actor := w.actorOf(req.Extra)
	if actor != "" && !w.s.limiter(actor).Allow() {
		return nil, limited("rate limit: %s makes more than %g calls a second", actor, float64(w.s.o.Rate))
	}
	id, err := w.owned(ctx, req.Params.URI, req.Extra)
	if err != nil {
		return nil, err
	}
	st, err := w.s.state(ctx, id)
	if err != nil {
		return nil, err
	}
	r := w.s.resultOf(st, templateOf(id))
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Cacheable: sdk.Cacheable{CacheScope: "private"}, Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
}

// listResources is a receiving middleware that answers resources/list
// with the actor's delegations as resources (delegation://ID), its newest
// maxList, from the same listing as delegation_list (the visibility
// store: no worker involved). A request with a cursor (this server never
// gives one) is passed on as it is.
func (w *watcher) listResources(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*sdk.ListResourcesResult)
		if err != nil || !ok || method != "resources/list" {
			return res, err
		}
		if p, _ := req.GetParams().(*sdk.ListResourcesParams); p != nil && p.Cursor != "" {
			return res, err
		}
		actor := w.actorOf(req.GetExtra())
		if actor == "" {
			return res, nil
		}
		if !w.s.limiter(actor).Allow() {
			return nil, limited("rate limit: %s makes more than %g calls a second", actor, float64(w.s.o.Rate))
		}
		// One actor's list: no one else's client or cache may serve it.
		lr.CacheScope = "private"
		rows, err := client.List(ctx, w.s.o.Client, client.ListOptions{Namespace: w.s.o.Namespace, Starter: actor, Pages: 1})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if len(lr.Resources) == maxList {
				break
			}
			if !contracts.ValidWorkflowID(r.ID) {
				continue // not a local_workflow_id: as delegation_list, left out
			}
			lr.Resources = append(lr.Resources, &sdk.Resource{URI: ResourceScheme + r.ID, Name: r.ID, MIMEType: "application/json",
				Title:       fmt.Sprintf("%s: %s", templateOf(r.ID), contracts.CurrentA2AState(r.A2AState)),
				Description: fmt.Sprintf("a delegation of yours (template %s), a2a_state %s, workflow %s, started %s", templateOf(r.ID), contracts.CurrentA2AState(r.A2AState), r.Status, r.Started.UTC().Format(time.RFC3339))})
		}
		return lr, nil
	}
}

// MaxWatched bounds the delegations one server follows for its
// subscribers; a subscription beyond it is refused.
const MaxWatched = 1000

func (w *watcher) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	if actor := w.actorOf(req.Extra); actor != "" && !w.s.limiter(actor).Allow() {
		return limited("rate limit: %s makes more than %g calls a second", actor, float64(w.s.o.Rate))
	}
	w.mu.Lock()
	full := len(w.watched) >= MaxWatched && w.watched[req.Params.URI] == nil
	w.mu.Unlock()
	if full {
		return limited("this server follows %d delegations for its subscribers already; poll delegation_status", MaxWatched)
	}
	id, err := w.owned(ctx, req.Params.URI, req.Extra)
	if err != nil {
		return err
	}
	// What the subscriber is told about is a change from now on.
	key, ended, err := w.s.serverKey(ctx, id)
	if err != nil {
		return err
	}
	if ended {
		return nil // nothing will change
	}
	actor := w.actorOf(req.Extra)
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.watched[req.Params.URI]
	if wt == nil {
		mine := 0
		for _, o := range w.watched {
			if o.owner == actor {
				mine++
			}
		}
		if mine >= w.s.o.MaxWatchedPerActor {
			return limited("your subscriptions follow %d delegations already (at most %d for one actor); unsubscribe from one, or poll delegation_status", mine, w.s.o.MaxWatchedPerActor)
		}
		wt = &watch{last: key, sessions: map[*sdk.ServerSession]bool{}, owner: actor}
		w.watched[req.Params.URI] = wt
	}
	wt.sessions[req.Session] = true
	if !w.running {
		w.running = true
		go w.loop()
	}
	return nil
}

func (w *watcher) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt := w.watched[req.Params.URI]; wt != nil {
		delete(wt.sessions, req.Session)
		if len(wt.sessions) == 0 {
			delete(w.watched, req.Params.URI)
		}
	}
	return nil
}

// loop reads every subscribed delegation's state each watchEvery and
// notifies on change; it stops once nothing is watched, and stops
// watching a delegation once it ended (after the last notification).
func (w *watcher) loop() {
	for {
		time.Sleep(watchEvery)
		w.mu.Lock()
		uris := make([]string, 0, len(w.watched))
		for u := range w.watched {
			uris = append(uris, u)
		}
		if len(uris) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, u := range uris {
			w.check(u)
		}
	}
}

func (w *watcher) check(uri string) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	id := strings.TrimPrefix(uri, ResourceScheme)
	key, ended, err := w.s.serverKey(ctx, id)
	if err != nil {
		return
	}
	w.mu.Lock()
	wt := w.watched[uri]
	changed := wt != nil && wt.last != key
	if wt != nil {
		wt.last = key
		if ended && changed {
			delete(w.watched, uri)
		}
	}
	w.mu.Unlock()
	if changed {
		if err := w.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil && !errors.Is(err, context.Canceled) {
			w.s.o.Logger.Warn("mcp: resource update not sent", "uri", uri, "err", err)
		}
	}
}

// serverKey is what a subscriber is notified of a change of: the
// workflow's status and its search attribute A2AState, read from the
// server (DescribeWorkflowExecution: no worker, no workflow task);
// ended is true once the workflow is no longer running.
func (s *Server) serverKey(ctx context.Context, id string) (key string, ended bool, err error) {
	d, err := s.handle(id).Describe(ctx)
	if err != nil {
		return "", false, err
	}
	return d.Status + "|" + d.A2AState, !d.Running(), nil
}

// resultOf is the Result of a state (as stateResult's structuredContent).
func (s *Server) resultOf(st contracts.State, tmpl string) Result {
	r := Result{LocalWorkflowID: st.LocalWorkflowID, A2AState: contracts.CurrentA2AState(st.A2AState), Template: tmpl}
	if q := st.Question; q != nil && st.Outcome == nil {
		r.Question = &Question{Round: q.Round, Text: contracts.CutText(q.Text, maxQuestionText), Source: SourceRemoteAgent, State: string(q.State)}
		if len(q.Data) <= maxQuestionData {
			r.Question.Data = q.Data
		}
	}
	if st.Outcome != nil {
		o := BoundOutcome(*st.Outcome)
		r.Outcome = &o
	} else if rt := st.Retrying; rt != nil {
		r.Retrying = &Retrying{Operation: contracts.Truncate(rt.Op, 100), Attempts: rt.Attempts,
			LastError: contracts.CutText(rt.LastError, maxRetryingError), NextAttempt: rt.Next.UTC()}
	}
	return r
}
