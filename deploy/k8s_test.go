package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/a2adelegate/delegate/activities"
	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/internal/devserver"
)

// manifests are the objects of deploy/k8s/*.yaml but the Helm values,
// each decoded strictly into its Kubernetes type (a field the API does not
// have is an error).
type manifests struct {
	deployments map[string]*appsv1.Deployment
	jobs        map[string]*batchv1.Job
	configMaps  map[string]*corev1.ConfigMap
	services    map[string]*corev1.Service
	ingresses   map[string]*networkingv1.Ingress
	pdbs        map[string]*policyv1.PodDisruptionBudget
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	m := manifests{map[string]*appsv1.Deployment{}, map[string]*batchv1.Job{}, map[string]*corev1.ConfigMap{},
		map[string]*corev1.Service{}, map[string]*networkingv1.Ingress{}, map[string]*policyv1.PodDisruptionBudget{}}
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("deploy/k8s: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "temporal-values.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := sigsyaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			if meta.Kind == "" && len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			var obj any
			var into func()
			switch meta.APIVersion + " " + meta.Kind {
			case "apps/v1 Deployment":
				d := &appsv1.Deployment{}
				obj, into = d, func() { m.deployments[meta.Metadata.Name] = d }
			case "batch/v1 Job":
				j := &batchv1.Job{}
				obj, into = j, func() { m.jobs[meta.Metadata.Name] = j }
			case "v1 ConfigMap":
				c := &corev1.ConfigMap{}
				obj, into = c, func() { m.configMaps[meta.Metadata.Name] = c }
			case "v1 Service":
				s := &corev1.Service{}
				obj, into = s, func() { m.services[meta.Metadata.Name] = s }
			case "networking.k8s.io/v1 Ingress":
				in := &networkingv1.Ingress{}
				obj, into = in, func() { m.ingresses[meta.Metadata.Name] = in }
			case "policy/v1 PodDisruptionBudget":
				p := &policyv1.PodDisruptionBudget{}
				obj, into = p, func() { m.pdbs[meta.Metadata.Name] = p }
			default:
				t.Fatalf("%s: document %d: %s %s %q: not a kind this test knows", f, i, meta.APIVersion, meta.Kind, meta.Metadata.Name)
			}
			if err := sigsyaml.UnmarshalStrict(doc, obj); err != nil {
				t.Fatalf("%s: %s %s: %v", f, meta.Kind, meta.Metadata.Name, err)
			}
			into()
		}
	}
	return m
}

// envMap is a container's env: literal values, and "secret:NAME/KEY" for
// a value from a Secret.
func envMap(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		default:
			out[e.Name] = e.Value
		}
	}
	return out
}

func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("deployment %v: want one container", d)
	}
	return d.Spec.Template.Spec.Containers[0]
}

// argValue is the value after flag in args ("" when absent).
func argValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// helmValues is deploy/k8s/temporal-values.yaml.
func helmValues(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("k8s/temporal-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("deploy/k8s/temporal-values.yaml: %v", err)
	}
	return v
}

// at follows keys down v (maps) and returns what is there.
func at(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("temporal-values.yaml: no %s", strings.Join(keys, "."))
		}
		v = m[k]
	}
	return v
}

// The Helm values run the server, admin tools and UI at the versions of
// go.mod, create the namespace the workers use, give the server dynamic
// config it knows, and point the UI at the codec server.
func TestHelmValues(t *testing.T) {
	v := helmValues(t)
	server, ui := goModVersion(t, "go.temporal.io/server"), goModVersion(t, "github.com/temporalio/ui-server/v2")
	for _, c := range []struct{ part, repo, tag string }{{"server", "temporalio/server", server}, {"admintools", "temporalio/admin-tools", server}, {"web", "temporalio/ui", ui}} {
		if r, tag := at(t, v, c.part, "image", "repository"), at(t, v, c.part, "image", "tag"); r != c.repo || tag != c.tag {
			t.Errorf("%s.image: %v:%v; go.mod builds %s:%s", c.part, r, tag, c.repo, c.tag)
		}
	}
	var namespaces []string
	for _, n := range at(t, v, "server", "config", "namespaces", "namespace").([]any) {
		namespaces = append(namespaces, n.(map[string]any)["name"].(string))
	}
	if at(t, v, "server", "config", "namespaces", "create") != true {
		t.Errorf("server.config.namespaces.create is not true")
	}
	m := loadManifests(t)
	ns := envMap(container(t, m.deployments["delegate-worker"]))["TEMPORAL_NAMESPACE"]
	if !slices.Contains(namespaces, ns) {
		t.Errorf("the workers use namespace %q; the chart creates %v", ns, namespaces)
	}
	// The dynamic config: keys the server knows, values it takes.
	dc, err := yaml.Marshal(at(t, v, "server", "dynamicConfig"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "dc.yaml")
	if err := os.WriteFile(p, dc, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := devserver.LoadDynamicConfig(p); err != nil {
		t.Errorf("server.dynamicConfig: %v", err)
	}
	if shards := at(t, v, "server", "config", "persistence", "numHistoryShards"); shards != 512 {
		t.Errorf("numHistoryShards %v: docs/scaling.md plans 512", shards)
	}
	// The UI's variables are the UI's, and its codec endpoint is the codec
	// server's ingress; the codec server lets the UI's origin call.
	tmpl, err := os.ReadFile(filepath.Join(moduleDir(t, "github.com/temporalio/ui-server/v2"), "config/docker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	uiEnv := map[string]string{}
	for _, e := range at(t, v, "web", "additionalEnv").([]any) {
		e := e.(map[string]any)
		name := e["name"].(string)
		uiEnv[name], _ = e["value"].(string)
		if !strings.Contains(string(tmpl), `env "`+name+`"`) {
			t.Errorf("web.additionalEnv: %s is not read by the UI's config", name)
		}
	}
	if uiEnv["TEMPORAL_DEFAULT_NAMESPACE"] != ns {
		t.Errorf("the UI's default namespace %q is not the workers' %q", uiEnv["TEMPORAL_DEFAULT_NAMESPACE"], ns)
	}
	codecHost := m.ingresses["delegate-codec-server"].Spec.Rules[0].Host
	if uiEnv["TEMPORAL_CODEC_ENDPOINT"] != "https://"+codecHost {
		t.Errorf("the UI's codec endpoint %q is not the codec server's ingress https://%s", uiEnv["TEMPORAL_CODEC_ENDPOINT"], codecHost)
	}
	uiHost := at(t, v, "web", "ingress", "hosts").([]any)[0].(string)
	if origin := argValue(container(t, m.deployments["delegate-codec-server"]).Args, "--ui-origin"); origin != "https://"+uiHost {
		t.Errorf("the codec server lets %q call, not the UI at https://%s", origin, uiHost)
	}
	if at(t, v, "server", "tls", "frontend", "requireClientAuth") != true {
		t.Errorf("the frontend should take mutual TLS (the workers present a client certificate)")
	}
	if name := at(t, v, "server", "tls", "frontend", "serverName"); envMap(container(t, m.deployments["delegate-worker"]))["TEMPORAL_TLS_SERVER_NAME"] != name {
		t.Errorf("the workers check the frontend's certificate for a name other than %v", name)
	}
}

// The setup Job registers every search attribute the workflow sets, with
// the script docker-compose.yml runs, on the admin tools of go.mod's server.
func TestK8sTemporalSetup(t *testing.T) {
	m := loadManifests(t)
	job := m.jobs["delegate-temporal-setup"]
	if job == nil {
		t.Fatal("no Job delegate-temporal-setup")
	}
	c := job.Spec.Template.Spec.Containers[0]
	env := envMap(c)
	checkSearchAttributes(t, "deploy/k8s/temporal-setup.yaml", env["DELEGATE_SEARCH_ATTRIBUTES"])
	if want := "temporalio/admin-tools:" + goModVersion(t, "go.temporal.io/server"); c.Image != want {
		t.Errorf("the Job runs %s, want %s", c.Image, want)
	}
	if worker := envMap(container(t, m.deployments["delegate-worker"])); env["TEMPORAL_NAMESPACE"] != worker["TEMPORAL_NAMESPACE"] || env["TEMPORAL_ADDRESS"] != worker["TEMPORAL_ADDRESS"] {
		t.Errorf("the Job sets up %s at %s; the workers use %s at %s", env["TEMPORAL_NAMESPACE"], env["TEMPORAL_ADDRESS"], worker["TEMPORAL_NAMESPACE"], worker["TEMPORAL_ADDRESS"])
	}
	script, err := os.ReadFile("temporal/setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.configMaps["delegate-temporal-setup"].Data["setup.sh"]; got != string(script) {
		t.Errorf("the ConfigMap delegate-temporal-setup does not hold deploy/temporal/setup.sh as it is: copy it again")
	}
	if !slices.Equal(c.Command, []string{"sh", "/etc/delegate-setup/setup.sh"}) {
		t.Errorf("the Job runs %v", c.Command)
	}
	checkMounts(t, m, "Job delegate-temporal-setup", job.Spec.Template.Spec, c)
}

// checkMounts checks that every file a container is pointed at (an env
// value under a mount) is in the ConfigMap or Secret mounted there, as far
// as this repository holds them.
func checkMounts(t *testing.T, m manifests, where string, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		if _, ok := volumes[vm.Name]; !ok {
			t.Errorf("%s mounts volume %s, which the pod does not have", where, vm.Name)
		}
	}
	paths := []string{}
	for _, v := range envMap(c) {
		if strings.HasPrefix(v, "/etc/") {
			paths = append(paths, v)
		}
	}
	paths = append(paths, c.Command...)
	for _, p := range paths {
		if !strings.HasPrefix(p, "/etc/") {
			continue
		}
		found := false
		for _, vm := range c.VolumeMounts {
			key, ok := strings.CutPrefix(p, vm.MountPath+"/")
			if !ok {
				continue
			}
			found = true
			v := volumes[vm.Name]
			if v.ConfigMap != nil {
				cm := m.configMaps[v.ConfigMap.Name]
				if cm == nil {
					t.Errorf("%s: %s: ConfigMap %s is not in deploy/k8s", where, p, v.ConfigMap.Name)
				} else if _, ok := cm.Data[key]; !ok {
					t.Errorf("%s: %s: ConfigMap %s has no %s", where, p, v.ConfigMap.Name, key)
				}
			}
			if v.Secret != nil && strings.HasSuffix(v.Secret.SecretName, "-tls") && !slices.Contains([]string{"tls.crt", "tls.key", "ca.crt"}, key) {
				t.Errorf("%s: %s: a TLS secret holds tls.crt, tls.key and ca.crt", where, p)
			}
		}
		if !found {
			t.Errorf("%s: %s is in no volume mount", where, p)
		}
	}
}

// The worker, webhook and codec server run the worker image with commands
// and flags the worker build has, read variables it reads, find the files
// they are pointed at, run as the image's non-root user, and are sized and
// probed as docs/deployment.md says.
func TestK8sDelegate(t *testing.T) {
	m := loadManifests(t)
	for _, name := range []string{"delegate-worker", "delegate-webhook", "delegate-codec-server"} {
		d := m.deployments[name]
		if d == nil {
			t.Errorf("no Deployment %s", name)
			continue
		}
		c := container(t, d)
		if !strings.Contains(c.Image, "/delegate-worker:") {
			t.Errorf("%s runs %s, not the worker image", name, c.Image)
		}
		var env []string
		for k := range envMap(c) {
			env = append(env, k)
		}
		checkCommand(t, "deploy/k8s "+name, c.Args, env)
		checkMounts(t, m, "Deployment "+name, d.Spec.Template.Spec, c)
		sc := d.Spec.Template.Spec.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 10001 {
			t.Errorf("%s: runs as %+v; want non-root, user 10001 (the image's)", name, sc)
		}
		if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("%s: the root filesystem should be read-only", name)
		}
		if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
			t.Errorf("%s: no memory limit or CPU request", name)
		}
		sel := d.Spec.Selector.MatchLabels
		for k, v := range sel {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("%s: the selector %v does not select its pods %v", name, sel, d.Spec.Template.Labels)
			}
		}
	}

	w := m.deployments["delegate-worker"]
	c := container(t, w)
	if w.Spec.Replicas == nil || *w.Spec.Replicas < 2 {
		t.Errorf("workers: %v replicas; run at least two (docs/deployment.md)", w.Spec.Replicas)
	}
	// docs/scaling.md: 217 MB of RSS at 100,000 waiting.
	if mem := c.Resources.Limits.Memory().Value(); mem < 300<<20 {
		t.Errorf("workers: memory limit %d bytes, below the 217 MB measured (docs/scaling.md) with room", mem)
	}
	// The probes ask --health-addr.
	_, port, _ := strings.Cut(argValue(c.Args, "--health-addr"), ":")
	var healthPort int32
	for _, p := range c.Ports {
		if p.Name == "health" {
			healthPort = p.ContainerPort
		}
	}
	if strconv.Itoa(int(healthPort)) != port {
		t.Errorf("workers: port health %d, --health-addr port %q", healthPort, port)
	}
	for what, probe := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/healthz" || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("workers: the %s probe should GET /healthz on port health: %+v", what, probe)
		}
	}
	if pdb := m.pdbs["delegate-worker"]; pdb == nil || pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 {
		t.Errorf("workers: no PodDisruptionBudget keeping one")
	}

	// The workers register the webhook's public URL, which its ingress
	// serves; both share the push key.
	webhook := container(t, m.deployments["delegate-webhook"])
	pub := argValue(webhook.Args, "--public-url")
	if envMap(c)["DELEGATE_PUSH_URL"] != pub {
		t.Errorf("workers push to %q; the webhook is public at %q", envMap(c)["DELEGATE_PUSH_URL"], pub)
	}
	if u, err := url.Parse(pub); err != nil || u.Host != m.ingresses["delegate-webhook"].Spec.Rules[0].Host {
		t.Errorf("the webhook's public URL %q is not its ingress's host", pub)
	}
	if envMap(c)["DELEGATE_PUSH_KEY"] != envMap(webhook)["DELEGATE_PUSH_KEY"] || envMap(c)["DELEGATE_PUSH_KEY"] == "" {
		t.Errorf("workers and webhook do not share the push key")
	}
	for _, name := range []string{"delegate-webhook", "delegate-codec-server"} {
		in, svc := m.ingresses[name], m.services[name]
		if in == nil || svc == nil || in.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != name {
			t.Errorf("%s: no Service and Ingress to it", name)
			continue
		}
		for k, v := range svc.Spec.Selector {
			if m.deployments[name].Spec.Template.Labels[k] != v {
				t.Errorf("Service %s does not select its pods", name)
			}
		}
	}
}

// The trust store and the policy of the ConfigMap load as the worker loads
// them.
func TestK8sConfig(t *testing.T) {
	cm := loadManifests(t).configMaps["delegate-config"]
	p := filepath.Join(t.TempDir(), "trust.json")
	if err := os.WriteFile(p, []byte(cm.Data["trust.json"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cards.LoadTrustStore(p); err != nil {
		t.Errorf("delegate-config trust.json: %v", err)
	}
	if _, err := activities.ParsePolicy([]byte(cm.Data["policy.json"])); err != nil {
		t.Errorf("delegate-config policy.json: %v", err)
	}
}
