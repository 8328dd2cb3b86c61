package deploy

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"gopkg.in/yaml.v3"

	"github.com/a2adelegate/delegate/internal/metrics"
	"github.com/a2adelegate/delegate/internal/testutil"
)

const (
	rulesFile     = "prometheus/delegate-rules.yaml"
	rulesTestFile = "prometheus/delegate-rules.test.yaml"
	dashboardFile = "grafana/delegate.json"
)

// served is every metric name a worker's /metrics serves of delegate's
// own (internal/metrics), each of them observed once, as scraped: a
// histogram's _bucket, _sum and _count.
func served(t *testing.T) map[string]bool {
	t.Helper()
	m := metrics.New(metrics.Options{})
	defer m.Close()
	m.AgentRequest("https://agent.example", "JSONRPC", "GetTask", metrics.ResultOK, time.Millisecond)
	m.TokenRequest("https://idp.example/token", metrics.ResultOK)
	m.CardVerification(metrics.CardVerified)
	m.Handler().WithTags(map[string]string{"status": "completed", "category": ""}).Counter(metrics.DelegationsEnded).Inc(1)
	srv := httptest.NewServer(m.HTTPHandler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for name, f := range fams {
		out[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[name+s] = true
			}
		}
	}
	for _, n := range metrics.Names {
		if !out[n] {
			t.Errorf("%s is not served", n)
		}
	}
	return out
}

// ruleExprs are the expressions of the alert rules.
func ruleExprs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr
		}
	}
	return out
}

// dashboardExprs are the queries of the dashboard's panels and variables.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					out[path+"."+k] = s
				}
				walk(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		}
	}
	walk("dashboard", doc)
	return out
}

var metricName = regexp.MustCompile(`\b(delegate_[a-z0-9_]+|temporal_[a-z0-9_]+)\b`)

// Every metric the dashboard and the alert rules query is one the worker
// serves (internal/metrics), and every one of delegate's metrics is on
// the dashboard.
func TestDashboardAndRulesQueryServedMetrics(t *testing.T) {
	have := served(t)
	exprs := ruleExprs(t)
	if len(exprs) < 5 {
		t.Fatalf("%s: %d alert rules, want the five of issue 40", rulesFile, len(exprs))
	}
	dash := dashboardExprs(t)
	if len(dash) == 0 {
		t.Fatalf("%s: no queries", dashboardFile)
	}
	onDashboard := map[string]bool{}
	for where, e := range dash {
		exprs[where] = e
	}
	for where, e := range exprs {
		names := metricName.FindAllString(e, -1)
		if len(names) == 0 {
			t.Errorf("%s queries none of delegate's metrics: %s", where, e)
		}
		for _, n := range names {
			if !have[n] {
				t.Errorf("%s queries %s, which the worker does not serve", where, n)
			}
			if strings.HasPrefix(where, "dashboard") {
				onDashboard[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")] = true
			}
		}
	}
	for _, n := range metrics.Names {
		if !onDashboard[n] {
			t.Errorf("%s is on no panel of %s", n, dashboardFile)
		}
	}
	if !slices.Contains(metrics.Names, metrics.WaitingDelegations) {
		t.Error("metrics.Names lacks the waiting gauge")
	}
}

// The alert rules pass `promtool check rules`, and their unit tests
// (delegate-rules.test.yaml) `promtool test rules`. Without promtool
// (Debian's prometheus package) the test skips, unless
// DELEGATE_REQUIRE_PROMTOOL=1 (make test-rules, CI).
func TestRulesPromtool(t *testing.T) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("DELEGATE_REQUIRE_PROMTOOL") == "1" {
			t.Fatal("promtool is not on PATH (apt-get install prometheus)")
		}
		testutil.SkipGroup(t, testutil.GroupPromtool, "promtool is not on PATH (apt-get install prometheus; make test-rules)")
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
