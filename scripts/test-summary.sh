#!/bin/sh
# The last line of `make test`: which groups of tests were skipped (as
# testutil.SkipGroup recorded them in the file $1, one line per test:
# group<TAB>make target<TAB>test), how many tests each, and the make target
# that runs them. Only what was recorded is named as skipped.
log=$1
skipped=$(awk -F'\t' '
  !seen[$1]++ { order[++n] = $1; target[$1] = $2 }
  { count[$1]++ }
  END {
    for (i = 1; i <= n; i++) {
      g = order[i]; c = count[g]
      printf "%s%s (%d %s: %s runs %s)", (i > 1 ? ", " : ""), g, c, (c == 1 ? "test" : "tests"), target[g], (c == 1 ? "it" : "them")
    }
  }' "$log" 2>/dev/null)
if [ -n "$skipped" ]; then
  echo "make test: skipped $skipped; the browser test is not part of make test (make test-browser)"
else
  echo "make test: no test group skipped; the browser test is not part of make test (make test-browser)"
fi
