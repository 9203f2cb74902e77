package deploytest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	releaseName = "turn"
	namespace   = "rtc"
)

// rendered holds the chart's objects, each decoded into its API type.
type rendered struct {
	statefulSet    *appsv1.StatefulSet
	daemonSet      *appsv1.DaemonSet // only with handover.enabled, instead of the StatefulSet
	service        *corev1.Service
	pdb            *policyv1.PodDisruptionBudget
	secret         *corev1.Secret
	serviceAccount *corev1.ServiceAccount
	serviceMonitor *monitoringv1.ServiceMonitor
	dashboard      *corev1.ConfigMap // only with grafanaDashboard.enabled
	// objects lists every object's metadata, for checks that apply to all.
	objects []*metav1.ObjectMeta
}

// valuesFile is a file under testdata/.
func valuesFile(name string) string { return filepath.Join("testdata", name) }

// helmTemplate runs `helm template` and returns its output, or an error
// holding helm's message.
func helmTemplate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"template", releaseName, chartDir, "--namespace", namespace}, args...)
	stdout, stderr, err := run(nil, tool(t, "HELM", "helm"), full...)
	if err != nil {
		return "", fmt.Errorf("helm %s: %w: %s", strings.Join(full, " "), err, stderr)
	}
	return stdout, nil
}

// render renders the chart and decodes every object strictly.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	out, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return decodeAll(t, out)
}

// decodeAll splits helm's output into documents and decodes each into its
// typed struct with unknown fields rejected, so a misspelt or misplaced
// field fails here instead of being dropped by the API server.
func decodeAll(t *testing.T, out string) rendered {
	t.Helper()
	var r rendered
	for _, doc := range strings.Split(out, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("read kind: %v\n%s", err, doc)
		}
		var obj any
		var om *metav1.ObjectMeta
		switch gvk := meta.APIVersion + "/" + meta.Kind; gvk {
		case "apps/v1/StatefulSet":
			r.statefulSet = new(appsv1.StatefulSet)
			obj, om = r.statefulSet, &r.statefulSet.ObjectMeta
		case "apps/v1/DaemonSet":
			r.daemonSet = new(appsv1.DaemonSet)
			obj, om = r.daemonSet, &r.daemonSet.ObjectMeta
		case "v1/Service":
			r.service = new(corev1.Service)
			obj, om = r.service, &r.service.ObjectMeta
		case "policy/v1/PodDisruptionBudget":
			r.pdb = new(policyv1.PodDisruptionBudget)
			obj, om = r.pdb, &r.pdb.ObjectMeta
		case "v1/Secret":
			r.secret = new(corev1.Secret)
			obj, om = r.secret, &r.secret.ObjectMeta
		case "v1/ServiceAccount":
			r.serviceAccount = new(corev1.ServiceAccount)
			obj, om = r.serviceAccount, &r.serviceAccount.ObjectMeta
		case "v1/ConfigMap":
			r.dashboard = new(corev1.ConfigMap)
			obj, om = r.dashboard, &r.dashboard.ObjectMeta
		case "monitoring.coreos.com/v1/ServiceMonitor":
			r.serviceMonitor = new(monitoringv1.ServiceMonitor)
			obj, om = r.serviceMonitor, &r.serviceMonitor.ObjectMeta
		default:
			t.Fatalf("unexpected object %s in the chart's output:\n%s", gvk, doc)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("decode %s strictly: %v\n%s", meta.Kind, err, doc)
		}
		r.objects = append(r.objects, om)
	}
	if (r.statefulSet == nil) == (r.daemonSet == nil) || r.service == nil {
		t.Fatalf("chart rendered not exactly one of StatefulSet and DaemonSet, or no Service:\n%s", out)
	}
	return r
}

// stripComments drops whole-line YAML comments, which helm leaves around
// documents ("# Source: ...").
func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// pod is the workload's pod template spec: the StatefulSet's, or in
// hand-over mode the DaemonSet's.
func (r rendered) pod() *corev1.PodSpec { return &r.podTemplate().Spec }

func (r rendered) podTemplate() *corev1.PodTemplateSpec {
	if r.daemonSet != nil {
		return &r.daemonSet.Spec.Template
	}
	return &r.statefulSet.Spec.Template
}

// container is the turnd container.
func (r rendered) container(t *testing.T) *corev1.Container {
	t.Helper()
	cs := r.pod().Containers
	if len(cs) != 1 || cs[0].Name != "turnd" {
		t.Fatalf("want exactly one container named turnd, got %d", len(cs))
	}
	return &cs[0]
}
