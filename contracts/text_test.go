package contracts

import "testing"

func TestInertMarkdown(t *testing.T) {
	for in, want := range map[string]string{
		"[click](http://x) <img src=x> ![i](y)": "` [click](http://x) <img src=x> ![i](y) `",
		"two\n\nlines\r\n===":                   "` two  lines  === `",
		"a ``` b ` c":                           "```` a ``` b ` c ````",
		"https://evil.example/bare":             "` https://evil.example/bare `",
		" \n\t":                                 "",
		"Claims\x1b]0;title\a \u202eevil\u200b": "` Claims\ufffd]0;title\ufffd \ufffdevil\ufffd `",
	} {
		if got := InertMarkdown(in); got != want {
			t.Errorf("InertMarkdown(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"añb", 2, "a…"}, // ñ is two bytes: never cut inside a rune
	} {
		if got := Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
