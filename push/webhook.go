package push

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
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
// replayed or stale, 413 too large, 405 not POST, and counts each. With
// WithSignatures, a notification signed with a JWT ("Authorization:
// Bearer <JWT>") must verify too (401 bad_signature).
type Handler struct {
	key    []byte
	relay  Relay
	logger *slog.Logger
	sig    Signatures

	mu     sync.Mutex
	seen   map[[32]byte]bool    // notifications taken
	latest map[string]time.Time // newest status timestamp taken, per task
	counts map[string]int64
}

// Signatures check the JWT an agent signs its notifications with
// ("Authorization: Bearer <JWT>", as the a2a-python SDK does): Verify
// checks it against the agent's keys (cards.Fetcher.VerifyJWT: the trust
// store, jku through the HTTP guard) and returns its claims; Required
// says whether an origin's notifications must be signed (the trust
// store's require_signature).
type Signatures struct {
	Verify   func(ctx context.Context, jwt, origin string) (map[string]any, error)
	Required func(origin string) bool
}

// MaxSignatureAge bounds how old (or how far ahead) a signed
// notification's iat may be.
const MaxSignatureAge = 5 * time.Minute

// MaxClockSkew bounds how far in the future a status timestamp may be: a
// later one is refused, so that it cannot make every real notification
// of its task look stale.
const MaxClockSkew = 5 * time.Minute

// NewHandler returns the webhook for key (Settings.Key) relaying with
// relay; logger nil discards.
func NewHandler(key []byte, relay Relay, logger *slog.Logger) *Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{key: key, relay: relay, logger: logger, seen: map[[32]byte]bool{}, latest: map[string]time.Time{}, counts: map[string]int64{}}
}

// WithSignatures makes the webhook verify signed notifications (and
// require them where sig.Required says).
func (h *Handler) WithSignatures(sig Signatures) *Handler {
	h.sig = sig
	return h
}

// checkSignature verifies a JWT-signed notification: a valid signature by
// a key trusted for origin, issued within MaxSignatureAge, over this body
// (claim request_body_sha256, hex) when the claim is there.
func (h *Handler) checkSignature(ctx context.Context, r *http.Request, body []byte, origin string) error {
	jwt, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if strings.Count(jwt, ".") != 2 {
		if h.sig.Required != nil && h.sig.Required(origin) {
			return errors.New("the trust store requires signed notifications from " + origin)
		}
		return nil
	}
	if h.sig.Verify == nil {
		return nil // signed, but no trust store to check it against: the token decides
	}
	claims, err := h.sig.Verify(ctx, jwt, origin)
	if err != nil {
		return err
	}
	if iat, ok := claims["iat"].(float64); ok {
		if d := time.Since(time.Unix(int64(iat), 0)); d > MaxSignatureAge || d < -MaxSignatureAge {
			return fmt.Errorf("signed at %s, more than %s away", time.Unix(int64(iat), 0).UTC().Format(time.RFC3339), MaxSignatureAge)
		}
	} else {
		return errors.New("the signed claims have no iat")
	}
	if want, ok := claims["request_body_sha256"].(string); ok {
		sum := sha256.Sum256(body)
		if !strings.EqualFold(want, hex.EncodeToString(sum[:])) {
			return errors.New("the signature covers another body (request_body_sha256)")
		}
	}
	return nil
}

// Counts returns how many notifications ended each way ("accepted",
// "bad_token", "bad_signature", "unknown_delegation", "replayed", "stale", "malformed",
// "future", "too_large", "read_failed", "not_post", "relay_failed").
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
	State string `json:"state"`
	// Timestamp is kept when it is a string; another value (an epoch
	// number) is a member the relay does not need and is ignored.
	Timestamp lenientString `json:"timestamp"`
}

// lenientString reads a JSON string, and any other value as "".
type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = lenientString(v)
	}
	return nil
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
		n.state, n.timestamp = t.Status.State, string(t.Status.Timestamp)
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
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.refuse(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("over %d bytes", MaxNotificationBytes), wid)
		return
	case err != nil:
		h.refuse(w, http.StatusBadRequest, "read_failed", "the body could not be read", wid)
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
	origin := r.URL.Query().Get("agent")
	if subtle.ConstantTimeCompare([]byte(token), []byte(Token(h.key, wid, n.taskID, origin))) != 1 {
		h.refuse(w, http.StatusUnauthorized, "bad_token", "bad or missing notification token", wid)
		return
	}
	if err := h.checkSignature(r.Context(), r, body, origin); err != nil {
		h.logger.Info("push signature refused", "workflow_id", wid, "why", err.Error())
		h.refuse(w, http.StatusUnauthorized, "bad_signature", "signature refused", wid)
		return
	}
	// A notification is the same as one taken when it says the same of the
	// same task (its state and status timestamp), however its JSON is
	// written; one without a timestamp (an artifact update) by its body.
	ident := wid + "\x00" + n.taskID + "\x00" + n.state + "\x00" + n.timestamp
	if n.timestamp == "" {
		ident += "\x00" + string(body)
	}
	sum := sha256.Sum256([]byte(ident))
	at, timed := time.Parse(time.RFC3339Nano, n.timestamp)
	if timed == nil && at.After(time.Now().Add(MaxClockSkew)) {
		h.refuse(w, http.StatusConflict, "future", "status timestamp is in the future", wid)
		return
	}
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
		var inv *serviceerror.InvalidArgument
		if errors.As(err, &nf) || errors.As(err, &inv) {
			h.refuse(w, http.StatusNotFound, "unknown_delegation", "no such running delegation", wid)
			return
		}
		h.logger.Warn("push not relayed", "workflow_id", wid, "error", err.Error())
		h.refuse(w, http.StatusBadGateway, "relay_failed", "could not signal the delegation", wid)
		return
	}
	h.mu.Lock()
	h.counts["accepted"]++
	h.mu.Unlock()
	h.logger.Info("push relayed", "workflow_id", wid, "task_id", contracts.Truncate(n.taskID, 200))
	w.WriteHeader(http.StatusOK)
}
