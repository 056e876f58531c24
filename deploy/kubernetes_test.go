package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/worker"
)

// The Kubernetes manifests are read as YAML and checked against the binary:
// the config they mount decodes, the ports and probe paths are the ones
// sluice serves, and the queries KEDA runs name exported metrics.

type k8sObject map[string]any

// path walks maps by key and lists by index ("spec.template.spec.containers.0").
func (o k8sObject) path(p string) any {
	var cur any = map[string]any(o)
	for _, k := range strings.Split(p, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[k]
		case []any:
			i := 0
			for _, r := range k {
				if r < '0' || r > '9' {
					return nil
				}
				i = i*10 + int(r-'0')
			}
			if i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func (o k8sObject) str(p string) string {
	s, _ := o.path(p).(string)
	return s
}

func (o k8sObject) num(p string) int {
	n, _ := o.path(p).(int)
	return n
}

func readManifests(t *testing.T) map[string]k8sObject {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	objs := map[string]k8sObject{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			o := k8sObject(m)
			kind := o.str("kind")
			if kind == "" || o.str("apiVersion") == "" {
				t.Fatalf("%s: an object without kind or apiVersion", f)
			}
			if _, dup := objs[kind]; dup {
				t.Fatalf("%s: a second %s", f, kind)
			}
			objs[kind] = o
		}
	}
	for _, k := range []string{"Kustomization", "ConfigMap", "Deployment", "Service", "ServiceMonitor", "ScaledObject", "PodDisruptionBudget"} {
		if objs[k] == nil {
			t.Fatalf("no %s in deploy/kubernetes", k)
		}
	}
	return objs
}

func scaledObjectQueries(t *testing.T) []string {
	t.Helper()
	so := readManifests(t)["ScaledObject"]
	var qs []string
	triggers, _ := so.path("spec.triggers").([]any)
	for _, tr := range triggers {
		tr := k8sObject(tr.(map[string]any))
		if tr.str("type") == "prometheus" {
			qs = append(qs, tr.str("metadata.query"))
		}
	}
	return qs
}

func TestKubernetesManifests(t *testing.T) {
	objs := readManifests(t)
	dep, cm := objs["Deployment"], objs["ConfigMap"]
	c := k8sObject(dep.path("spec.template.spec.containers.0").(map[string]any))
	checkKustomization(t)
	checkContainer(t, dep, cm, c)
	cfgText, secretVar, env := checkSecretEnv(t, cm, c)
	port := checkConfigDecodes(t, cfgText, secretVar, env)
	checkPortsAndProbes(t, c, port)
	checkServiceAndMonitor(t, dep, objs["Service"], objs["ServiceMonitor"], port)
	checkScaledObject(t, dep, objs["ScaledObject"], cfgText)
}

// checkKustomization: every file is listed in the kustomization, or named
// in a comment there.
func checkKustomization(t *testing.T) {
	t.Helper()
	kz, err := os.ReadFile("kubernetes/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !strings.Contains(string(kz), b) {
			t.Errorf("kustomization.yaml does not mention %s", b)
		}
	}

}

// checkContainer: the container runs the image's binary with the mounted
// config; the pod runs as non-root and waits long enough for a clean
// shutdown.
func checkContainer(t *testing.T, dep, cm, c k8sObject) {
	t.Helper()
	args, _ := c.path("args").([]any)
	var argv []string
	for _, a := range args {
		argv = append(argv, a.(string))
	}
	commandHelp(t, argv, "run")
	mount := ""
	for _, m := range c.path("volumeMounts").([]any) {
		m := k8sObject(m.(map[string]any))
		if m.str("name") == "config" {
			mount = m.str("mountPath")
		}
	}
	if cfgPath := argv[len(argv)-1]; filepath.Dir(cfgPath) != mount {
		t.Errorf("config %s is not under the ConfigMap mount %s", cfgPath, mount)
	} else if data, _ := cm.path("data").(map[string]any); data[filepath.Base(cfgPath)] == nil {
		t.Errorf("the ConfigMap has no %s", filepath.Base(cfgPath))
	}
	if name := dep.str("spec.template.spec.volumes.0.configMap.name"); name != cm.str("metadata.name") {
		t.Errorf("the Deployment mounts ConfigMap %q, the ConfigMap is %q", name, cm.str("metadata.name"))
	}

	if dep.path("spec.template.spec.securityContext.runAsNonRoot") != true {
		t.Error("runAsNonRoot is not set")
	}
	if grace := time.Duration(dep.num("spec.template.spec.terminationGracePeriodSeconds")) * time.Second; grace <= worker.DefaultShutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds %v is not above the shutdown timeout %v", grace, worker.DefaultShutdownTimeout)
	}

}

// checkSecretEnv: the token comes from a Secret and reaches the config
// through ${VAR}. It returns the config, the Secret's variable and the
// container's environment (each variable's value is value-of-NAME).
func checkSecretEnv(t *testing.T, cm, c k8sObject) (string, string, map[string]string) {
	t.Helper()
	env := map[string]string{}
	secretVar := ""
	for _, e := range c.path("env").([]any) {
		e := k8sObject(e.(map[string]any))
		if e.str("valueFrom.secretKeyRef.name") != "" && e.str("valueFrom.secretKeyRef.key") != "" {
			secretVar = e.str("name")
		}
		env[e.str("name")] = "value-of-" + e.str("name")
	}
	data, _ := cm.path("data").(map[string]any)
	cfgText, _ := data["sluice.yaml"].(string)
	if secretVar == "" || !strings.Contains(cfgText, "${"+secretVar+"}") {
		t.Errorf("no Secret reference that the config uses (env %q)", secretVar)
	}
	if regexp.MustCompile(`(?i)bearer [a-z0-9]{8,}`).MatchString(cfgText) {
		t.Error("the ConfigMap seems to hold a literal token")
	}

	return cfgText, secretVar, env
}

// checkConfigDecodes: the config decodes with the real decoder, and opens
// the metrics port beyond loopback explicitly; it returns that port.
func checkConfigDecodes(t *testing.T, cfgText, secretVar string, env map[string]string) string {
	t.Helper()
	// beyond loopback explicitly.
	var raw struct {
		Metrics struct {
			Listen string `yaml:"listen"`
		} `yaml:"metrics"`
	}
	if err := yaml.Unmarshal([]byte(cfgText), &raw); err != nil {
		t.Fatalf("sluice.yaml: %v", err)
	}
	if raw.Metrics.Listen == "" || run.LoopbackListen(raw.Metrics.Listen) {
		t.Errorf("metrics.listen %q: Prometheus in another pod cannot reach a loopback address", raw.Metrics.Listen)
	}
	cfg, err := config.Parse([]byte(cfgText), config.Options{Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Errorf("sluice.yaml does not decode: %v", err)
	} else {
		if cfg.Metrics.Listen != raw.Metrics.Listen {
			t.Errorf("decoded metrics.listen %q, want %q", cfg.Metrics.Listen, raw.Metrics.Listen)
		}
		// KEDA changes the replica count: each replica's share follows the
		// live count (deploy/autoscale_test.go checks every example).
		if m := cfg.Limiter.Share.Mode; m != "members" && m != "leases" {
			t.Errorf("limiter.share.mode %q with an autoscaler, want members or leases", m)
		}
		if cfg.Target.Headers["Authorization"] != "Bearer value-of-"+secretVar {
			t.Errorf("the Authorization header does not come from the Secret's variable")
		}
	}
	_, port, err := net.SplitHostPort(raw.Metrics.Listen)
	if err != nil {
		t.Fatal(err)
	}
	return port

}

// checkPortsAndProbes: ports and probes line up with what sluice serves.
func checkPortsAndProbes(t *testing.T, c k8sObject, port string) {
	t.Helper()
	if p := c.str("ports.0.name"); p != "metrics" || strconv.Itoa(c.num("ports.0.containerPort")) != port {
		t.Errorf("container port %s/%d, want metrics/%s", p, c.num("ports.0.containerPort"), port)
	}
	srv := httptest.NewServer(run.OpsHandler(config.Default().Metrics, prometheus.NewRegistry(), func(context.Context) error { return nil }, nil))
	defer srv.Close()
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		path := c.str(probe + ".httpGet.path")
		if c.str(probe+".httpGet.port") != "metrics" {
			t.Errorf("%s probes port %v, want metrics", probe, c.path(probe+".httpGet.port"))
		}
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s path %q answers %d", probe, path, resp.StatusCode)
		}
	}
	if c.str("readinessProbe.httpGet.path") != "/readyz" || c.str("livenessProbe.httpGet.path") != "/healthz" {
		t.Error("readiness must probe /readyz and liveness /healthz")
	}

}

// checkServiceAndMonitor: the Service selects the pods and names the port
// the ServiceMonitor scrapes.
func checkServiceAndMonitor(t *testing.T, dep, svc, sm k8sObject, port string) {
	t.Helper()
	podLabels, _ := dep.path("spec.template.metadata.labels").(map[string]any)
	sel, _ := svc.path("spec.selector").(map[string]any)
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("Service selector %s=%v does not match the pods", k, v)
		}
	}
	if svc.str("spec.ports.0.name") != "metrics" || svc.str("spec.ports.0.targetPort") != "metrics" || strconv.Itoa(svc.num("spec.ports.0.port")) != port {
		t.Errorf("Service port %v, want metrics → metrics on %s", svc.path("spec.ports.0"), port)
	}
	smSel, _ := sm.path("spec.selector.matchLabels").(map[string]any)
	svcLabels, _ := svc.path("metadata.labels").(map[string]any)
	for k, v := range smSel {
		if svcLabels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%v does not match the Service", k, v)
		}
	}
	if sm.str("spec.endpoints.0.port") != "metrics" || sm.str("spec.endpoints.0.path") != "/metrics" {
		t.Errorf("ServiceMonitor endpoint %v", sm.path("spec.endpoints.0"))
	}

}

// checkScaledObject: KEDA scales the Deployment on lag and the saturation
// gauge; the formula uses only named triggers, and the queries only
// metrics sluice exports.
func checkScaledObject(t *testing.T, dep, so k8sObject, cfgText string) {
	t.Helper()
	// formula uses only named triggers.
	if so.str("spec.scaleTargetRef.name") != dep.str("metadata.name") {
		t.Errorf("ScaledObject targets %q", so.str("spec.scaleTargetRef.name"))
	}
	names := map[string]string{}
	for _, tr := range so.path("spec.triggers").([]any) {
		tr := k8sObject(tr.(map[string]any))
		names[tr.str("name")] = tr.str("type")
		if tr.str("type") == "nats-jetstream" {
			if tr.str("metadata.consumer") == "" || tr.str("metadata.stream") == "" || tr.str("metadata.lagThreshold") == "" {
				t.Errorf("nats-jetstream trigger lacks stream, consumer or lagThreshold: %v", tr["metadata"])
			}
			if !strings.Contains(cfgText, "stream: "+tr.str("metadata.stream")) || !strings.Contains(cfgText, "consumer: "+tr.str("metadata.consumer")) {
				t.Errorf("the lag trigger watches %s/%s, not the configured stream and consumer", tr.str("metadata.stream"), tr.str("metadata.consumer"))
			}
		}
	}
	if names["lag"] != "nats-jetstream" || names["saturation"] != "prometheus" {
		t.Errorf("triggers %v: want lag (nats-jetstream) and saturation (prometheus)", names)
	}
	formula := so.str("spec.advanced.scalingModifiers.formula")
	for _, id := range regexp.MustCompile(`[a-z_]+`).FindAllString(formula, -1) {
		if _, ok := names[id]; !ok && id != "min" && id != "max" {
			t.Errorf("formula %q uses %q, which is not a trigger name", formula, id)
		}
	}
	if !strings.Contains(readFile(t, "kubernetes/scaledobject.yaml"), "sluice_budget_saturation is") {
		t.Error("scaledobject.yaml does not explain the saturation gauge")
	}
	exported := exportedMetrics(t)
	for _, q := range scaledObjectQueries(t) {
		for _, p := range checkPromQL(exported, "ScaledObject", q) {
			t.Error(p)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The pod runs without a Kubernetes API token, has a memory limit for the
// runtime's soft limit (internal/memlimit), and at most one pod is evicted
// at a time by a voluntary disruption.
func TestKubernetesPodHardening(t *testing.T) {
	objs := readManifests(t)
	dep, pdb := objs["Deployment"], objs["PodDisruptionBudget"]
	if dep.path("spec.template.spec.automountServiceAccountToken") != false {
		t.Error("automountServiceAccountToken is not false")
	}
	if dep.str("spec.template.spec.containers.0.resources.limits.memory") == "" {
		t.Error("no memory limit: GOMEMLIMIT is derived from it")
	}
	pdbSel, _ := pdb.path("spec.selector.matchLabels").(map[string]any)
	podLbl, _ := dep.path("spec.template.metadata.labels").(map[string]any)
	for k, v := range pdbSel {
		if podLbl[k] != v {
			t.Errorf("PodDisruptionBudget selector %s=%v does not match the pods", k, v)
		}
	}
	if len(pdbSel) == 0 || pdb.num("spec.maxUnavailable") != 1 {
		t.Errorf("PodDisruptionBudget %v: want maxUnavailable 1 over the pods", pdb["spec"])
	}
}

// The Pub/Sub overlay's config decodes with the real decoder and shares
// the budget by the live count through the NATS server it names.
func TestKubernetesPubSubOverlay(t *testing.T) {
	b := readFile(t, "kubernetes-pubsub/configmap.yaml")
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal([]byte(b), &cm); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GOOGLE_CLOUD_PROJECT": "my-project", "SLUICE_API_TOKEN": "t", "POD_NAME": "sluice-0"}
	cfg, err := config.Parse([]byte(cm.Data["sluice.yaml"]), config.Options{Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatalf("the Pub/Sub overlay's sluice.yaml does not decode: %v", err)
	}
	if cfg.Source.Kind != "pubsub" || cfg.Source.PubSub.Project != "my-project" {
		t.Errorf("source %q, project %q", cfg.Source.Kind, cfg.Source.PubSub.Project)
	}
	if cfg.Limiter.Share.Mode != "members" || cfg.Limiter.Share.NATSURL == "" {
		t.Errorf("share %+v: want members through a NATS URL", cfg.Limiter.Share)
	}
	so := readFile(t, "kubernetes-pubsub/scaledobject.yaml")
	sub := cfg.Source.PubSub.Subscription
	if !strings.Contains(so, "type: gcp-pubsub") || !strings.Contains(so, "subscriptions/"+sub+"\n") {
		t.Errorf("the ScaledObject does not watch subscription %q with gcp-pubsub", sub)
	}
	ta := readFile(t, "kubernetes-pubsub/triggerauthentication.yaml")
	if !strings.Contains(ta, "podIdentity:") || !strings.Contains(ta, "provider: gcp") {
		t.Error("the TriggerAuthentication does not use podIdentity provider gcp")
	}
}
