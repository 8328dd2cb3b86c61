package push

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/a2adelegate/delegate/contracts"
)

// MaxNotificationBytes bounds a notification's body; a larger one is
// refused before it is decoded.
const MaxNotificationBytes = 1 << 20

// maxSeen bounds the notifications remembered for replay and staleness;
// past it the memory starts again (the workflow reads the task on every
// push, so a replay let through then costs one read).
const maxSeen = 100_000

// Relay delivers an authenticated push to its delegation: client.Get(c,
// id).TaskUpdate in production.
type Relay func(ctx context.Context, workflowID string, u contracts.TaskUpdate) error

// Handler is the webhook agents push to: POST <public URL>/<workflow id>
// with a notification (A2A 1.0 §4.3: a StreamResponse, {"task": ...},
// {"statusUpdate": ...} or {"artifactUpdate": ...}; the 0.3 form, the Task
// or event itself, is read too) and the token in A2A-Notification-Token,
// X-A2A-Notification-Token, or "Authorization: Bearer" (§4.3.3). It answers 200 when it signalled the
// delegation; 400 malformed, 401 bad token, 404 unknown delegation, 409
// replayed or stale, 413 too large, 405 not POST, and counts each.
type Handler struct {
	key    []byte
	relay  Relay
	logger *slog.Logger

	mu     sync.Mutex
	seen   map[[32]byte]bool    // notifications taken
	latest map[string]time.Time // newest status timestamp taken, per task
	counts map[string]int64
}

// NewHandler returns the webhook for key (Settings.Key) relaying with
// relay; logger nil discards.
func NewHandler(key []byte, relay Relay, logger *slog.Logger) *Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{key: key, relay: relay, logger: logger, seen: map[[32]byte]bool{}, latest: map[string]time.Time{}, counts: map[string]int64{}}
}

// Counts returns how many notifications ended each way ("accepted",
// "bad_token", "unknown_delegation", "replayed", "stale", "malformed",
// "too_large", "not_post", "relay_failed").
func (h *Handler) Counts() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int64, len(h.counts))
	for k, v := range h.counts {
		out[k] = v
	}
	return out
}

func (h *Handler) refuse(w http.ResponseWriter, code int, what, why, wid string) {
	h.mu.Lock()
	h.counts[what]++
	h.mu.Unlock()
	h.logger.Info("push refused", "why", what, "workflow_id", wid)
	http.Error(w, why, code)
}

// notification is what the webhook reads of a push: the task, its state
// and status timestamp.
type notification struct {
	taskID, state, timestamp string
}

type status struct {
	State     string `json:"state"`
	Timestamp string `json:"timestamp"`
}

type taskish struct {
	ID     string  `json:"id"`
	TaskID string  `json:"taskId"`
	Kind   string  `json:"kind"`
	Status *status `json:"status"`
}

// parse reads the 1.0 StreamResponse forms and the 0.3 bare ones.
func parse(body []byte) (notification, error) {
	var env struct {
		Task           *taskish `json:"task"`
		StatusUpdate   *taskish `json:"statusUpdate"`
		ArtifactUpdate *taskish `json:"artifactUpdate"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return notification{}, fmt.Errorf("not JSON: %w", err)
	}
	var t *taskish
	id := func(t *taskish) string { return t.ID }
	switch {
	case env.Task != nil:
		t = env.Task
	case env.StatusUpdate != nil:
		t, id = env.StatusUpdate, func(t *taskish) string { return t.TaskID }
	case env.ArtifactUpdate != nil:
		t, id = env.ArtifactUpdate, func(t *taskish) string { return t.TaskID }
	default:
		var bare taskish
		if err := json.Unmarshal(body, &bare); err != nil {
			return notification{}, err
		}
		t = &bare
		if bare.Kind != "task" {
			id = func(t *taskish) string { return t.TaskID }
		}
	}
	n := notification{taskID: id(t)}
	if t.Status != nil {
		n.state, n.timestamp = t.Status.State, t.Status.Timestamp
	}
	if n.taskID == "" {
		return notification{}, errors.New("no task id")
	}
	return n, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.refuse(w, http.StatusMethodNotAllowed, "not_post", "POST a notification", "")
		return
	}
	wid, err := url.PathUnescape(r.URL.EscapedPath()[strings.LastIndex(r.URL.EscapedPath(), "/")+1:])
	if err != nil || wid == "" {
		h.refuse(w, http.StatusNotFound, "unknown_delegation", "no delegation in the path", "")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxNotificationBytes))
	if err != nil {
		h.refuse(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("over %d bytes", MaxNotificationBytes), wid)
		return
	}
	n, err := parse(body)
	if err != nil {
		h.refuse(w, http.StatusBadRequest, "malformed", "not an A2A push notification: "+err.Error(), wid)
		return
	}
	token := r.Header.Get("A2A-Notification-Token")
	if token == "" {
		token = r.Header.Get("X-A2A-Notification-Token")
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); token == "" && ok {
		token = bearer // the config's authentication (A2A 1.0 §4.3.3)
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(Token(h.key, wid, n.taskID))) != 1 {
		h.refuse(w, http.StatusUnauthorized, "bad_token", "bad or missing notification token", wid)
		return
	}
	sum := sha256.Sum256(append([]byte(wid+"\x00"), body...))
	at, timed := time.Parse(time.RFC3339Nano, n.timestamp)
	taskKey := wid + "\x00" + n.taskID
	h.mu.Lock()
	switch {
	case h.seen[sum]:
		h.mu.Unlock()
		h.refuse(w, http.StatusConflict, "replayed", "this notification was already taken", wid)
		return
	case timed == nil && at.Before(h.latest[taskKey]):
		h.mu.Unlock()
		h.refuse(w, http.StatusConflict, "stale", "older than a notification already taken", wid)
		return
	}
	if len(h.seen) >= maxSeen {
		h.seen, h.latest = map[[32]byte]bool{}, map[string]time.Time{}
	}
	h.seen[sum] = true
	if timed == nil {
		h.latest[taskKey] = at
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := h.relay(ctx, wid, contracts.TaskUpdate{TaskID: n.taskID, State: contracts.Truncate(n.state, 100), Timestamp: contracts.Truncate(n.timestamp, 100)}); err != nil {
		h.mu.Lock()
		delete(h.seen, sum) // not taken: the agent may retry it
		h.mu.Unlock()
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			h.refuse(w, http.StatusNotFound, "unknown_delegation", "no such running delegation", wid)
			return
		}
		h.refuse(w, http.StatusBadGateway, "relay_failed", "could not signal the delegation", wid)
		return
	}
	h.mu.Lock()
	h.counts["accepted"]++
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
