package codec

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// MaxRequestBytes bounds a codec server request body (the UI sends the
// payloads of one page of history at a time).
const MaxRequestBytes = 16 << 20

// ServerOptions configure Handler.
type ServerOptions struct {
	// Origins are the browser origins allowed to call the server (the
	// Temporal UI's, e.g. "http://127.0.0.1:8233"); others get no CORS
	// headers, so a browser refuses them their answers.
	Origins []string
	// AllowOrigin, when set, is asked about origins not in Origins (for an
	// origin known only once the UI has started).
	AllowOrigin func(origin string) bool
	// Token, when set, must come as "Authorization: Bearer <Token>" on
	// every request but the CORS preflight.
	Token string
}

// Handler serves Temporal's codec server protocol for k: POST
// .../encode and .../decode with a JSON {"payloads": [...]} body (the
// SDK's converter.NewPayloadCodecHTTPHandler), with CORS for o.Origins,
// the optional bearer token, and bodies bounded by MaxRequestBytes.
func Handler(k *Keys, o ServerOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(k.Codec())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && (slices.Contains(o.Origins, origin) || (o.AllowOrigin != nil && o.AllowOrigin(origin))) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "POST .../encode or .../decode", http.StatusMethodNotAllowed)
			return
		}
		if o.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(o.Token)) != 1 {
				http.Error(w, "a bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxRequestBytes)
		inner.ServeHTTP(w, r)
	})
}
