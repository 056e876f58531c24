package deploy_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// runbookPrefix is where every alert's runbook_url points: a section of
// docs/troubleshooting.md on GitHub.
const runbookPrefix = "https://github.com/sluicehq/sluice/blob/main/docs/troubleshooting.md#"

// Every alert has a runbook_url to a section of docs/troubleshooting.md
// that exists, and the section names the alert.
func TestAlertRunbooks(t *testing.T) {
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := markdownSections(string(doc))
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			url := r.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, runbookPrefix)
			if !ok {
				t.Errorf("%s: runbook_url %q does not point into docs/troubleshooting.md", r.Alert, url)
				continue
			}
			body, ok := sections[anchor]
			if !ok {
				t.Errorf("%s: runbook_url anchor #%s is no heading of docs/troubleshooting.md", r.Alert, anchor)
			} else if !strings.Contains(body, r.Alert) {
				t.Errorf("%s: section #%s does not name the alert", r.Alert, anchor)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts found")
	}
}

// markdownSections maps the GitHub anchor of every heading to the text
// under it (up to the next heading of any level).
func markdownSections(md string) map[string]string {
	out := map[string]string{}
	var anchor string
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "#") {
			anchor = githubAnchor(strings.TrimLeft(line, "# "))
			out[anchor] = ""
			continue
		}
		if anchor != "" {
			out[anchor] += line + "\n"
		}
	}
	return out
}

var notAnchor = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)

// githubAnchor is the id GitHub gives a heading: lower case, punctuation
// dropped, spaces as hyphens.
func githubAnchor(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = notAnchor.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

func TestGitHubAnchor(t *testing.T) {
	for h, want := range map[string]string{
		"Too many 429s":                       "too-many-429s",
		"sluice is down or cannot be scraped": "sluice-is-down-or-cannot-be-scraped",
		"`sluice status`":                     "sluice-status",
		"Exit status: 0, 1, 2":                "exit-status-0-1-2",
	} {
		if got := githubAnchor(h); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", h, got, want)
		}
	}
}
