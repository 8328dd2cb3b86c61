package client

import (
	"testing"
)

// An empty Connection reads TEMPORAL_ADDRESS (the README's snippet relies
// on it); a set Address wins over it.
func TestConnectionEnvAndFields(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir) // no profile file of the user's
	t.Setenv("HOME", dir)
	t.Setenv("TEMPORAL_CONFIG_FILE", "")
	t.Setenv("TEMPORAL_PROFILE", "")
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:7645")
	t.Setenv("TEMPORAL_NAMESPACE", "")
	for _, tc := range []struct {
		conn Connection
		want string
	}{
		{Connection{}, "127.0.0.1:7645"},
		{Connection{Address: "127.0.0.1:7233"}, "127.0.0.1:7233"},
	} {
		o, err := tc.conn.Options()
		if err != nil {
			t.Fatal(err)
		}
		if o.HostPort != tc.want || o.Namespace != DefaultNamespace {
			t.Errorf("%+v: %s (namespace %s), want %s (namespace %s)", tc.conn, o.HostPort, o.Namespace, tc.want, DefaultNamespace)
		}
	}
}
