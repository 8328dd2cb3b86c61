package contracts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxKeyword bounds, in bytes, a value the client puts in a Keyword search
// attribute (Temporal refuses more than 2048 bytes and would terminate the
// workflow): values are cut with Truncate.
const MaxKeyword = 1000

// Truncate returns s when it is at most n bytes long, else its first n
// bytes or fewer, cut at a rune boundary, followed by "…".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return prefix(s, n) + "…"
}

// prefix is the longest prefix of s of at most n bytes that ends on a
// rune boundary (len(s) > n).
func prefix(s string, n int) string {
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// InertMarkdown makes untrusted text inert in the Temporal UI's markdown
// (which renders links, HTML, images and autolinks): the text becomes one
// inline code span (CommonMark §6.1), whose content is never interpreted,
// on one line (line breaks and tabs become spaces, so no blank line can
// end the span), fenced by more backticks than any run of backticks in it.
// Other control and format characters (escape sequences, bidi overrides,
// zero-width characters: Unicode Cc and Cf) become U+FFFD, so that the
// details are inert in a terminal too. Empty or blank text becomes "".
func InertMarkdown(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f' || r == 0x85 || r == 0x2028 || r == 0x2029:
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return utf8.RuneError
		}
		return r
	}, s)
	if strings.TrimSpace(s) == "" {
		return ""
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	return fence + " " + s + " " + fence
}
