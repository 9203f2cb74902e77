package deploytest

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// chartCase is one values file and what must hold for it beyond the
// invariants every rendering shares (checkInvariants).
type chartCase struct {
	values string
	// drain is "delay+timeout" of the file turnd will read, when the chart
	// does not render it (existingSecret).
	drainDelay, drainTimeout string
	bindService              bool // NET_BIND_SERVICE expected
	offload                  bool // the kernel fast path's BPF and NET_ADMIN, as UID 0, expected
	check                    func(t *testing.T, r rendered)
}

var chartCases = []chartCase{
	{values: "fleet.values.yaml", check: checkFleet},
	{values: "defaults.values.yaml", check: func(t *testing.T, r rendered) {
		if r.serviceMonitor != nil {
			t.Error("ServiceMonitor rendered although serviceMonitor.enabled is false")
		}
		if r.dashboard != nil {
			t.Error("dashboard ConfigMap rendered although grafanaDashboard.enabled is false")
		}
		if got := r.pod().TerminationGracePeriodSeconds; got == nil || *got != 3600+30 {
			t.Errorf("terminationGracePeriodSeconds = %v, want 3630 (1h drain + 30s margin)", got)
		}
		wantArgs(t, r, "--config=/etc/turnd/config/turnd.yaml")
		c := onlyConfig(t, r)
		wantList(t, "listen.udp", c.Listen.UDP, "${TURND_NODE_IP}:3478")
		wantList(t, "listen.tcp", c.Listen.TCP, "${TURND_NODE_IP}:3478")
		wantList(t, "listen.tls", c.Listen.TLS)
		wantEqual(t, "relay.address", c.Relay.Address, "${TURND_NODE_IP}")
		wantEqual(t, "relay.external_address", c.Relay.ExternalAddress, "")
		wantEqual(t, "http.address", c.HTTP.Address, "${TURND_NODE_IP}:9641")
		wantEqual(t, "http.admin_token_file", c.HTTP.AdminTokenFile, "")
		if slices.ContainsFunc(r.pod().Volumes, func(v corev1.Volume) bool { return v.Name == "admin-token" }) {
			t.Error("admin-token volume rendered although adminToken.secretName is empty")
		}
		wantServicePorts(t, r, "turn-udp/UDP/3478", "turn-tcp/TCP/3478", "http/TCP/9641")
		// A draining pod redirects to its ready peers: the headless Service's name.
		wantEqual(t, "service name", r.service.Name, "turn-turnd")
		wantList(t, "drain.alternate_servers", c.Drain.AlternateServers, "turn-turnd.rtc.svc.cluster.local:3478")
	}},
	{values: "tls.values.yaml", check: func(t *testing.T, r rendered) {
		c := onlyConfig(t, r)
		wantList(t, "listen.tls", c.Listen.TLS, "${TURND_NODE_IP}:5349")
		wantEqual(t, "tls.cert_file", c.TLS.CertFile, "/etc/turnd/tls/tls.crt")
		wantEqual(t, "tls.key_file", c.TLS.KeyFile, "/etc/turnd/tls/tls.key")
		// Passwords survive YAML quoting and are not touched by templating.
		wantEqual(t, "auth.users.alice", c.Auth.Users["alice"], "p@ss: with 'quotes' and # hash")
		wantEqual(t, "auth.users.bob", c.Auth.Users["bob"], "${NOT_AN_ENV_REFERENCE}")
		wantVolume(t, r, "tls", "turn-example-org-tls", "/etc/turnd/tls")
		// The admin token is a Secret of its own, mounted whole so a rotation reaches the file.
		wantVolume(t, r, "admin-token", "turnd-admin", "/etc/turnd/admin")
		wantEqual(t, "http.admin_token_file", c.HTTP.AdminTokenFile, "/etc/turnd/admin/bearer")
		wantServicePorts(t, r, "turn-udp/UDP/3478", "turn-tcp/TCP/3478", "turns/TCP/5349", "http/TCP/9641")
	}},
	{values: "existing-secret.values.yaml", drainDelay: "15s", drainTimeout: "2h", check: func(t *testing.T, r rendered) {
		if r.secret != nil {
			t.Error("chart rendered a config Secret although existingSecret is set")
		}
		wantVolume(t, r, "config", "turnd-prod-config", "/etc/turnd/config")
		wantArgs(t, r, "--config=/etc/turnd/config/turnd.yaml")
		if _, ok := r.statefulSet.Spec.Template.Annotations["checksum/config"]; ok {
			t.Error("checksum/config set although the chart cannot see the existing Secret's content")
		}
		if got := *r.pod().TerminationGracePeriodSeconds; got != 2*3600+15+30 {
			t.Errorf("terminationGracePeriodSeconds = %d, want 7245 (2h + 15s + 30s)", got)
		}
	}},
	{values: "ipv6.values.yaml", check: func(t *testing.T, r rendered) {
		c := onlyConfig(t, r)
		wantList(t, "listen.udp", c.Listen.UDP, "[${TURND_NODE_IP}]:3478")
		wantEqual(t, "relay.address", c.Relay.Address, "${TURND_NODE_IP}")
		// Servers listed in the values are kept as they are.
		wantList(t, "drain.alternate_servers", c.Drain.AlternateServers, "[2001:db8::10]:3478", "turn-b.example.org:3478")
		wantEqual(t, "http.address", c.HTTP.Address, "[${TURND_NODE_IP}]:9641")
		if fams := r.service.Spec.IPFamilies; len(fams) != 1 || fams[0] != corev1.IPv6Protocol {
			t.Errorf("Service ipFamilies = %v, want [IPv6]", fams)
		}
		if got := *r.pod().TerminationGracePeriodSeconds; got != 45*60+30+30 {
			t.Errorf("terminationGracePeriodSeconds = %d, want 2730", got)
		}
	}},
	{values: "monitoring.values.yaml", check: func(t *testing.T, r rendered) {
		sm := r.serviceMonitor
		if sm == nil {
			t.Fatal("no ServiceMonitor rendered although serviceMonitor.enabled is true")
		}
		if sm.Labels["release"] != "kube-prometheus-stack" {
			t.Errorf("ServiceMonitor labels = %v, want release=kube-prometheus-stack", sm.Labels)
		}
		sel, err := labelsSelector(&sm.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(r.service.Labels)) {
			t.Errorf("ServiceMonitor selector %v does not select the Service (%v)", sm.Spec.Selector, err)
		}
		if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{namespace}) {
			t.Errorf("namespaceSelector = %v, want [%s]", sm.Spec.NamespaceSelector.MatchNames, namespace)
		}
		if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" ||
			string(sm.Spec.Endpoints[0].Interval) != "15s" {
			t.Errorf("endpoints = %+v, want one on port http, /metrics, every 15s", sm.Spec.Endpoints)
		}
	}},
	{values: "dashboard.values.yaml", check: checkDashboard},
	{values: "edge.values.yaml", bindService: true, check: func(t *testing.T, r rendered) {
		c := onlyConfig(t, r)
		wantList(t, "listen.tls", c.Listen.TLS)
		wantList(t, "listen.tcp_tls", c.Listen.TCPTLS, "${TURND_NODE_IP}:443")
		wantList(t, "listen.proxy_protocol.listeners", c.Listen.ProxyProtocol.Listeners, "${TURND_NODE_IP}:3478", "${TURND_NODE_IP}:443")
		wantList(t, "listen.proxy_protocol.trusted", c.Listen.ProxyProtocol.Trusted, "10.0.0.0/8")
		wantEqual(t, "relay.address", c.Relay.Address, "${TURND_NODE_IP},2001:db8::10")
		wantEqual(t, "relay.external_address", c.Relay.ExternalAddress, "203.0.113.10,2001:db8::10")
		wantServicePorts(t, r, "turn-udp/UDP/3478", "turn-tcp/TCP/3478", "turns/TCP/443", "http/TCP/9641")
	}},
	{values: "low-ports.values.yaml", bindService: true, check: func(t *testing.T, r rendered) {
		wantList(t, "listen.tls", onlyConfig(t, r).Listen.TLS, "${TURND_NODE_IP}:443")
	}},
	{values: "nat-by-node.values.yaml", check: func(t *testing.T, r rendered) {
		names, files := r.configFiles(t)
		want := map[string]string{
			"turnd-node-a.yaml":                  "203.0.113.10",
			"turnd-node-b.yaml":                  "203.0.113.11",
			"turnd-node-c.example.internal.yaml": "203.0.113.12",
		}
		if len(names) != len(want) {
			t.Fatalf("config files = %v, want one per node", names)
		}
		for name, ip := range want {
			c := parseTurndConfig(t, files[name])
			wantEqual(t, name+": relay.external_address", c.Relay.ExternalAddress, ip)
			wantEqual(t, name+": relay.address", c.Relay.Address, "${TURND_NODE_IP}")
		}
		wantArgs(t, r, "--config=/etc/turnd/config/turnd-$(TURND_NODE_NAME).yaml")
		// The user's zone term survives and is ANDed with the node list.
		terms := r.pod().Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchExpressions) != 2 {
			t.Fatalf("node selector terms = %+v, want the zone term plus the hostname list", terms)
		}
		host := terms[0].MatchExpressions[1]
		if host.Key != "kubernetes.io/hostname" || host.Operator != corev1.NodeSelectorOpIn ||
			!slices.Equal(host.Values, []string{"node-a", "node-b", "node-c.example.internal"}) {
			t.Errorf("hostname expression = %+v", host)
		}
	}},
	{values: "offload.values.yaml", offload: true, check: func(t *testing.T, r rendered) {
		wantEqual(t, "relay.offload", onlyConfig(t, r).Relay.Offload, "tc")
	}},
	{values: "offload-auto-low-ports.values.yaml", offload: true, bindService: true, check: func(t *testing.T, r rendered) {
		wantEqual(t, "relay.offload", onlyConfig(t, r).Relay.Offload, "auto")
		wantList(t, "listen.tls", onlyConfig(t, r).Listen.TLS, "${TURND_NODE_IP}:443")
	}},
	{values: "offload-off.values.yaml", check: func(t *testing.T, r rendered) {
		// A bare off reaches the chart as false and turnd as the word.
		wantEqual(t, "relay.offload", onlyConfig(t, r).Relay.Offload, "off")
	}},
	{values: "nat-single.values.yaml", check: func(t *testing.T, r rendered) {
		c := onlyConfig(t, r)
		wantEqual(t, "relay.address", c.Relay.Address, "0.0.0.0")
		wantEqual(t, "relay.external_address", c.Relay.ExternalAddress, "198.51.100.7")
		wantList(t, "listen.udp", c.Listen.UDP, "0.0.0.0:3478")
		wantList(t, "listen.tcp", c.Listen.TCP)
		wantList(t, "drain.alternate_servers", c.Drain.AlternateServers) // redirectToPeers: false
		wantServicePorts(t, r, "turn-udp/UDP/3478", "http/TCP/9641")
	}},
}

func TestChartRenders(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(strings.TrimSuffix(tc.values, ".values.yaml"), func(t *testing.T) {
			r := render(t, "-f", valuesFile(tc.values))
			checkInvariants(t, tc, r)
			tc.check(t, r)
		})
	}
}

func TestHelmLintStrict(t *testing.T) {
	helm := tool(t, "HELM", "helm")
	for _, tc := range chartCases {
		t.Run(strings.TrimSuffix(tc.values, ".values.yaml"), func(t *testing.T) {
			stdout, stderr, err := run(nil, helm, "lint", "--strict", chartDir, "-f", valuesFile(tc.values))
			if err != nil {
				t.Fatalf("helm lint --strict: %v\n%s%s", err, stdout, stderr)
			}
			for _, line := range strings.Split(stdout+stderr, "\n") {
				if strings.Contains(line, "[WARNING]") || strings.Contains(line, "[ERROR]") {
					t.Errorf("helm lint: %s", line)
				}
			}
		})
	}
}

// onlyConfig is the single rendered turnd.yaml.
func onlyConfig(t *testing.T, r rendered) turndConfig {
	t.Helper()
	names, files := r.configFiles(t)
	if !slices.Equal(names, []string{"turnd.yaml"}) {
		t.Fatalf("config Secret files = %v, want [turnd.yaml]", names)
	}
	return parseTurndConfig(t, files["turnd.yaml"])
}

func wantEqual(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func wantList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func wantArgs(t *testing.T, r rendered, want ...string) {
	t.Helper()
	c := r.container(t)
	if len(c.Command) != 0 || !slices.Equal(c.Args, want) {
		t.Errorf("command %q args %q, want the image's entrypoint with args %q", c.Command, c.Args, want)
	}
}

// wantVolume checks that volume name is the Secret secretName mounted
// read-only at path.
func wantVolume(t *testing.T, r rendered, name, secretName, path string) {
	t.Helper()
	i := slices.IndexFunc(r.pod().Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 || r.pod().Volumes[i].Secret == nil || r.pod().Volumes[i].Secret.SecretName != secretName {
		t.Errorf("volume %s: want Secret %s, got %+v", name, secretName, r.pod().Volumes)
	}
	mounts := r.container(t).VolumeMounts
	j := slices.IndexFunc(mounts, func(m corev1.VolumeMount) bool { return m.Name == name })
	if j < 0 || mounts[j].MountPath != path || !mounts[j].ReadOnly || mounts[j].SubPath != "" {
		t.Errorf("mount of %s: want read-only at %s without subPath, got %+v", name, path, mounts)
	}
}

// wantServicePorts checks the Service's ports as "name/protocol/port".
func wantServicePorts(t *testing.T, r rendered, want ...string) {
	t.Helper()
	var got []string
	for _, p := range r.service.Spec.Ports {
		got = append(got, p.Name+"/"+string(p.Protocol)+"/"+itoa(p.Port))
	}
	if !slices.Equal(got, want) {
		t.Errorf("Service ports = %v, want %v", got, want)
	}
}
