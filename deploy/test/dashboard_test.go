package deploytest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// grafanaDashboard is the dashboard users import by hand; the chart ships a
// copy of it, because a chart cannot read files outside its directory.
var (
	grafanaDashboard = filepath.Join(repoRoot, "deploy", "grafana", "turnd.json")
	chartDashboard   = filepath.Join(chartDir, "dashboards", "turnd.json")
)

// checkDashboard: with grafanaDashboard.enabled the chart renders one
// ConfigMap that Grafana's sidecar picks up (label grafana_dashboard "1"),
// in the namespace asked for, holding the dashboard byte for byte.
func checkDashboard(t *testing.T, r rendered) {
	t.Helper()
	cm := r.dashboard
	if cm == nil {
		t.Fatal("no dashboard ConfigMap although grafanaDashboard.enabled is true")
	}
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("labels = %v, want grafana_dashboard: \"1\" for Grafana's sidecar", cm.Labels)
	}
	if cm.Namespace != "monitoring" || cm.Annotations["grafana_folder"] != "TURN" {
		t.Errorf("namespace %q, annotations %v; want monitoring and grafana_folder TURN", cm.Namespace, cm.Annotations)
	}
	want, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 1 || cm.Data["turnd.json"] != string(want) {
		t.Errorf("ConfigMap data is not deploy/grafana/turnd.json (keys %d, %d bytes vs %d)",
			len(cm.Data), len(cm.Data["turnd.json"]), len(want))
	}
	var dash map[string]any
	if err := json.Unmarshal([]byte(cm.Data["turnd.json"]), &dash); err != nil || dash["uid"] != "turnd" {
		t.Errorf("rendered dashboard does not parse as turnd's dashboard: %v", err)
	}
}

// TestChartDashboardIsTheGrafanaDashboard: the chart's copy must not drift
// from deploy/grafana/turnd.json. After editing that file:
// cp deploy/grafana/turnd.json deploy/helm/turnd/dashboards/turnd.json
func TestChartDashboardIsTheGrafanaDashboard(t *testing.T) {
	a, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(chartDashboard)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("deploy/helm/turnd/dashboards/turnd.json differs from deploy/grafana/turnd.json: copy it over")
	}
}
