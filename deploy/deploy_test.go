package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/worker"
)

// The deployment files (Grafana dashboard, alert rules, Kubernetes and KEDA
// manifests) name metrics in PromQL. These tests check every name against
// what sluice really registers, and the PromQL itself with promtool.

// exportedMetric is one metric family sluice registers.
type exportedMetric struct {
	labels    map[string]bool // variable and constant label names
	histogram bool
}

// recordingRegisterer registers into a real registry and remembers what each
// collector describes.
type recordingRegisterer struct {
	reg     *prometheus.Registry
	metrics map[string]*exportedMetric
}

var descRE = regexp.MustCompile(`fqName: "([^"]+)".*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}`)

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	hists := histogramsOf(c)
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			return fmt.Errorf("cannot read %s", d)
		}
		em := &exportedMetric{labels: map[string]bool{}, histogram: hists[m[1]] || histogramName(m[1])}
		for _, part := range []string{m[2], m[3]} {
			for _, l := range strings.Split(part, ",") {
				if name, _, _ := strings.Cut(strings.TrimSpace(l), "="); name != "" {
					em.labels[strings.Trim(name, `"`)] = true
				}
			}
		}
		r.metrics[m[1]] = em
	}
	return nil
}

// histogramsOf lists the histograms among the metrics c collects now. A
// package's metrics are one collector of several families, so the type
// of each is read from what it collects.
func histogramsOf(c prometheus.Collector) map[string]bool {
	out := map[string]bool{}
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) == nil && pb.Histogram != nil {
			if n := descRE.FindStringSubmatch(m.Desc().String()); n != nil {
				out[n[1]] = true
			}
		}
	}
	return out
}

// histogramName: a histogram vector collects nothing before its first
// observation; sluice's histograms, and only they, are in seconds.
func histogramName(name string) bool { return strings.HasSuffix(name, "_seconds") }

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *recordingRegisterer) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// statsSource is a source that only reports its stats.
type statsSource struct {
	sources.Source
	st sources.Stats
}

func (s statsSource) Stats(context.Context) (sources.Stats, error) { return s.st, nil }

// exportedMetrics builds every metric struct sluice registers in `sluice run`
// against a fresh registry and lists the families.
func exportedMetrics(t *testing.T) map[string]*exportedMetric {
	t.Helper()
	r := &recordingRegisterer{reg: prometheus.NewRegistry(), metrics: map[string]*exportedMetric{}}
	lim, err := limiter.New(limiter.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []prometheus.Collector{limiter.NewMetrics(), run.NewPaceCollector(lim), worker.NewMetrics(), cluster.NewMetrics()} {
		if err := r.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	src := statsSource{st: sources.Stats{DeadLetters: 1}}
	if err := run.RegisterOpsMetrics(r, limiter.NewSaturation(time.Minute), src, "test", nil); err != nil {
		t.Fatal(err)
	}
	// Added by Prometheus to every target.
	r.metrics["up"] = &exportedMetric{labels: map[string]bool{}}
	return r.metrics
}

// Labels every series carries once scraped, whatever the metric.
var targetLabels = map[string]bool{"job": true, "instance": true, "namespace": true, "pod": true, "service": true, "container": true, "endpoint": true}

var (
	metricNameRE = regexp.MustCompile(`\b(?:sluice|go|process|up)[a-zA-Z0-9_:]*`)
	// name{matchers} and by/without (labels)
	selectorRE = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
	groupingRE = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// checkPromQL reports metric names and label names in expr that sluice does
// not export. The check is lexical: names start with a known prefix, and
// labels are taken from selectors and by/without clauses.
func checkPromQL(exported map[string]*exportedMetric, where, expr string) []string {
	var problems []string
	base := func(name string) (*exportedMetric, bool) {
		if m, ok := exported[name]; ok {
			return m, true
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if m, ok := exported[strings.TrimSuffix(name, suf)]; ok && strings.HasSuffix(name, suf) && m.histogram {
				return m, true
			}
		}
		return nil, false
	}
	// Label values and other strings name no metric.
	expr = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(expr, `""`)
	var used []*exportedMetric
	for _, name := range metricNameRE.FindAllString(expr, -1) {
		if name == "up" && !regexp.MustCompile(`\bup\s*[{\[]|\bup\s*==`).MatchString(expr) {
			continue // the word "up" outside a selector
		}
		m, ok := base(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s is not a metric sluice exports", where, name))
			continue
		}
		used = append(used, m)
	}
	for _, sel := range selectorRE.FindAllStringSubmatch(expr, -1) {
		m, ok := base(sel[1])
		if !ok {
			continue
		}
		for _, lm := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
			if !m.labels[lm[1]] && !targetLabels[lm[1]] {
				problems = append(problems, fmt.Sprintf("%s: %s has no label %q", where, sel[1], lm[1]))
			}
		}
	}
	for _, g := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			l = strings.TrimSpace(l)
			if l == "" || targetLabels[l] {
				continue
			}
			found := false
			for _, m := range used {
				if m.labels[l] || (l == "le" && m.histogram) {
					found = true
				}
			}
			if !found {
				problems = append(problems, fmt.Sprintf("%s: no metric in the query has label %q", where, l))
			}
		}
	}
	return problems
}

func TestCheckPromQL(t *testing.T) {
	exported := map[string]*exportedMetric{
		"sluice_jobs_total":   {labels: map[string]bool{"outcome": true, "type": true}},
		"sluice_wait_seconds": {labels: map[string]bool{}, histogram: true},
		"sluice_tokens":       {labels: map[string]bool{}},
	}
	good := []string{
		`sum by (outcome) (rate(sluice_jobs_total{job="x",outcome="succeeded"}[5m]))`,
		`histogram_quantile(0.9, sum by (le) (rate(sluice_wait_seconds_bucket[1m])))`,
		`sluice_wait_seconds_count / sluice_wait_seconds_sum`,
		`sluice_tokens{instance=~"a.*"}`,
	}
	for _, e := range good {
		if p := checkPromQL(exported, "q", e); len(p) > 0 {
			t.Errorf("%s: %v", e, p)
		}
	}
	bad := map[string]string{
		`rate(sluice_job_total[5m])`:                    "sluice_job_total is not a metric",
		`sluice_tokens_bucket`:                          "sluice_tokens_bucket is not a metric",
		`sluice_jobs_total{status="200"}`:               `has no label "status"`,
		`sum by (reason) (rate(sluice_jobs_total[1m]))`: `no metric in the query has label "reason"`,
		`sum by (le) (sluice_tokens)`:                   `no metric in the query has label "le"`,
	}
	for e, want := range bad {
		p := checkPromQL(exported, "q", e)
		if len(p) == 0 || !strings.Contains(strings.Join(p, "; "), want) {
			t.Errorf("%s: problems %v, want %q", e, p, want)
		}
	}
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboardPanel struct {
	Type    string           `json:"type"`
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	ID      int                      `json:"id"`
}

type dashboard struct {
	Title      string           `json:"title"`
	UID        string           `json:"uid"`
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) (dashboard, []dashboardPanel) {
	t.Helper()
	b, err := os.ReadFile("grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("sluice.json: %v", err)
	}
	var all []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, all
}

// grafanaVars replaces the dashboard's variables with values PromQL accepts.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h",
	`"$job"`, `"sluice"`, "$budget", "60000",
)

func TestDashboardMetricsExist(t *testing.T) {
	exported := exportedMetrics(t)
	d, panels := readDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Error("the dashboard needs a title and a uid")
	}
	var problems []string
	seen := map[string]bool{}
	ids := map[int]bool{}
	queries := 0
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		for _, tg := range p.Targets {
			queries++
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: target %s has no expr", p.Title, tg.RefID)
			}
			problems = append(problems, checkPromQL(exported, fmt.Sprintf("panel %q", p.Title), tg.Expr)...)
			for _, n := range metricNameRE.FindAllString(tg.Expr, -1) {
				seen[n] = true
			}
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
		}
		problems = append(problems, checkPromQL(exported, "variable "+v.Name, q.Query)...)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if queries < 10 {
		t.Errorf("only %d queries", queries)
	}

	// The panels the issue asks for, each with the metrics that make it.
	want := map[string][]string{
		"Rate per instance":              {"sluice_limiter_rate_units_per_minute"},
		"Summed rate against the budget": {"sluice_limiter_rate_units_per_minute", "sluice_limiter_accepted_units_per_minute", "sluice_limiter_units_total"},
		"Tokens and queue":               {"sluice_limiter_tokens", "sluice_limiter_queue_length"},
		"Throttles by status":            {"sluice_limiter_throttles_total"},
		"Wait p50/p95":                   {"sluice_limiter_wait_seconds_bucket"},
		"Jobs by outcome":                {"sluice_jobs_total"},
		"Backlog":                        {"sluice_source_pending"},
		"Dead letters":                   {"sluice_source_dead_letters", "sluice_jobs_finished_total"},
		// Throughput counts only jobs finished for good, not hand-backs.
		"Throughput":                         {"sluice_jobs_finished_total"},
		"Job age p50/p95 and oldest pending": {"sluice_job_age_seconds_bucket", "sluice_oldest_pending_age_seconds"},
	}
	for title, names := range want {
		var p *dashboardPanel
		for i := range panels {
			if panels[i].Title == title {
				p = &panels[i]
			}
		}
		if p == nil {
			t.Errorf("no panel %q", title)
			continue
		}
		var exprs []string
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
		for _, n := range names {
			if !strings.Contains(strings.Join(exprs, "\n"), n) {
				t.Errorf("panel %q does not query %s", title, n)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(panelsExprs(panels, "Wait p50/p95")), "histogram_quantile(0.95") ||
		!strings.Contains(fmt.Sprint(panelsExprs(panels, "Wait p50/p95")), "histogram_quantile(0.5") {
		t.Error("panel \"Wait p50/p95\" lacks a 0.5 or 0.95 quantile")
	}
	t.Logf("%d panels, %d queries, %d metric names", len(panels), queries, len(seen))
}

func panelsExprs(panels []dashboardPanel, title string) []string {
	var out []string
	for _, p := range panels {
		if p.Title == title {
			for _, tg := range p.Targets {
				out = append(out, tg.Expr)
			}
		}
	}
	return out
}

// alertRules is the part of a Prometheus rule file the tests read.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestAlertRulesMetricsExist(t *testing.T) {
	exported := exportedMetrics(t)
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" {
				t.Errorf("group %s: a rule without an alert name", g.Name)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: needs a severity label, a summary and a description", r.Alert)
			}
			for _, p := range checkPromQL(exported, "alert "+r.Alert, r.Expr) {
				t.Error(p)
			}
		}
	}
	if n < 5 {
		t.Errorf("only %d alert rules", n)
	}
}

// TestOperationsDocNamesExported checks docs/operations.md against the metric
// structs, including the metrics of modes the scrape test does not run.
func TestOperationsDocNamesExported(t *testing.T) {
	exported := exportedMetrics(t)
	documented := testkit.DocumentedMetrics(t, "../docs/operations.md")
	for name := range documented {
		if exported[name] == nil {
			t.Errorf("docs/operations.md documents %s, which no metric struct registers", name)
		}
	}
	for name := range exported {
		if _, ok := documented[name]; strings.HasPrefix(name, "sluice_") && !ok {
			t.Errorf("%s is registered but not documented in docs/operations.md", name)
		}
	}
}
