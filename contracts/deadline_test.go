package contracts

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// relative is valid with "deadline_in" in place of "deadline".
func relative(t *testing.T, in string) []byte {
	t.Helper()
	return []byte(strings.Replace(valid, `"deadline": "2027-01-01T00:00:00Z"`, `"deadline_in": `+in, 1))
}

func TestResolveDeadline(t *testing.T) {
	raw := relative(t, `"1h30m"`)
	got, err := ResolveDeadline(raw, now)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "deadline_in") || !strings.Contains(string(got), `"deadline": "2026-11-29T13:30:00Z"`) {
		t.Fatalf("resolved:\n%s", got)
	}
	// Everything else is kept as written (an error's line and column
	// still point into the file).
	if want := strings.Replace(string(raw), `"deadline_in": "1h30m"`, `"deadline": "2026-11-29T13:30:00Z"`, 1); string(got) != want {
		t.Fatalf("resolved:\n%s\nwant:\n%s", got, want)
	}
	d, err := DecodeDelegation(raw, now)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Deadline.Equal(now.Add(90 * time.Minute)) {
		t.Errorf("Deadline = %s", d.Deadline)
	}
	// An absolute deadline is left alone.
	if got, err := ResolveDeadline([]byte(valid), now); err != nil || string(got) != valid {
		t.Errorf("ResolveDeadline(absolute) = %s, %v", got, err)
	}
	// Not an object: left to the decoder to explain.
	if got, err := ResolveDeadline([]byte(`[1`), now); err != nil || string(got) != `[1` {
		t.Errorf("ResolveDeadline([1) = %s, %v", got, err)
	}
	// Cut to the second, still in the future.
	if d, err := DeadlineAfter(now.Add(300*time.Millisecond), time.Hour); err != nil || !d.Equal(now.Add(time.Hour)) {
		t.Errorf("DeadlineAfter = %s, %v", d, err)
	}
	if d, err := DeadlineAfter(now.Add(300*time.Millisecond), 500*time.Millisecond); err != nil || !d.Equal(now.Add(800*time.Millisecond)) {
		t.Errorf("DeadlineAfter(500ms) = %s, %v", d, err)
	}
}

func TestResolveDeadlineRefused(t *testing.T) {
	both := []byte(strings.Replace(valid, `"deadline": "2027-01-01T00:00:00Z"`, `"deadline": "2027-01-01T00:00:00Z", "deadline_in": "1h"`, 1))
	tests := map[string]struct {
		doc   []byte
		field string
		rule  string
	}{
		"both":      {both, "deadline, deadline_in", "give exactly one"},
		"zero":      {relative(t, `"0s"`), "deadline_in", "must be more than 0"},
		"negative":  {relative(t, `"-1h"`), "deadline_in", "must be more than 0"},
		"too far":   {relative(t, `"8785h"`), "deadline_in", "more than 366 days"},
		"not a dur": {relative(t, `"tomorrow"`), "deadline_in", "not a Go duration"},
		"days":      {relative(t, `"2d"`), "deadline_in", "not a Go duration"},
		"number":    {relative(t, `3600`), "deadline_in", "wrong type: want string"},
		"twice":     {relative(t, `"1h", "deadline_in": "2h"`), "deadline_in", "given twice"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeDelegation(tt.doc, now)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Rule, tt.rule) || !errors.Is(err, ErrInvalidContract) {
				t.Fatalf("DecodeDelegation() error = %v, want %s: …%s…", err, tt.field, tt.rule)
			}
		})
	}
	// The longest accepted is MaxDeadline itself.
	if _, err := DecodeDelegation(relative(t, `"8784h"`), now); err != nil {
		t.Errorf("deadline_in 8784h (366 days): %v", err)
	}
}

// The --deadline-in flag overrides the file's deadline, whichever form.
func TestResolveDeadlineIn(t *testing.T) {
	for name, doc := range map[string][]byte{
		"absolute": []byte(valid),
		"relative": relative(t, `"72h"`),
		"neither":  with(t, "deadline", ""),
	} {
		got, err := ResolveDeadlineIn(doc, now, 10*time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d, err := DecodeDelegationStrict(got)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, got)
		}
		if !d.Deadline.Equal(now.Add(10 * time.Minute)) {
			t.Errorf("%s: Deadline = %s", name, d.Deadline)
		}
	}
	for _, in := range []time.Duration{0, -time.Minute, MaxDeadline + time.Second} {
		if _, err := ResolveDeadlineIn([]byte(valid), now, in); err == nil || !strings.Contains(err.Error(), "deadline_in: ") {
			t.Errorf("ResolveDeadlineIn(%s) error = %v", in, err)
		}
	}
}

// A contract that reaches the workflow with deadline_in (a backend's raw
// start) is refused, saying who resolves it.
func TestDecodeDelegationStrictRefusesDeadlineIn(t *testing.T) {
	_, err := DecodeDelegationStrict(relative(t, `"1h"`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "deadline_in" || !strings.Contains(fe.Rule, "resolved by the CLI or package client") || !strings.Contains(fe.Rule, `must send "deadline"`) {
		t.Fatalf("error = %v", err)
	}
}
