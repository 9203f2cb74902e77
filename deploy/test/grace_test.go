package deploytest

import (
	"strings"
	"testing"
)

// TestGracePeriodFollowsDrain checks the chart's Go-duration arithmetic
// against time.ParseDuration for the shapes people write.
func TestGracePeriodFollowsDrain(t *testing.T) {
	cases := []struct{ delay, timeout string }{
		{"0s", "1h"},
		{"0", "0s"},
		{"30s", "45m"},
		{"1m", "1h30m15s"},
		{"500ms", "1.5h"},
		{"1500ms", "2h"},
		{"+10s", "90m"},
		{"250us", "12h"},
		{"1µs", "3m"},
		{"100ns", "0.5s"},
		{"2h45m30.5s", "1h0m0s"},
	}
	base := valuesFile("defaults.values.yaml")
	for _, tc := range cases {
		t.Run(tc.delay+"+"+tc.timeout, func(t *testing.T) {
			r := render(t, "-f", base, "--set-string", "config.drain.delay="+tc.delay,
				"--set-string", "config.drain.timeout="+tc.timeout)
			want := goDrainSeconds(t, tc.delay, tc.timeout) + 30
			if got := *r.pod().TerminationGracePeriodSeconds; got != want {
				t.Errorf("terminationGracePeriodSeconds = %d, want %d", got, want)
			}
		})
	}
}

func TestGracePeriodSetByHand(t *testing.T) {
	base := valuesFile("defaults.values.yaml")
	r := render(t, "-f", base, "--set", "terminationGracePeriodSeconds=3600")
	if got := *r.pod().TerminationGracePeriodSeconds; got != 3600 {
		t.Errorf("terminationGracePeriodSeconds = %d, want the 3600 set by hand (equal to the drain is enough)", got)
	}
	r = render(t, "-f", base, "--set", "terminationGraceMarginSeconds=5")
	if got := *r.pod().TerminationGracePeriodSeconds; got != 3605 {
		t.Errorf("terminationGracePeriodSeconds = %d, want 3605", got)
	}
}

// TestRenderRefuses lists values the chart must refuse, each with the text
// the user should see.
func TestRenderRefuses(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"grace shorter than drain", []string{"--set", "terminationGracePeriodSeconds=3599"},
			"terminationGracePeriodSeconds: 3599 is shorter than config.drain.delay + config.drain.timeout = 3600s"},
		{"grace shorter than delay plus timeout", []string{"--set", "terminationGracePeriodSeconds=3610", "--set", "config.drain.delay=11s"},
			"= 3611s"},
		{"duration with a space", []string{"--set", "config.drain.timeout=1h 30m"}, "/config/drain/timeout"},
		{"bare number", []string{"--set", "config.drain.timeout=3600"}, "/config/drain/timeout"},
		{"bad duration without schema", []string{"--skip-schema-validation", "--set", "config.drain.delay=1 hour"},
			`config.drain.delay: "1 hour" is not a non-negative Go duration`},
		{"negative duration without schema", []string{"--skip-schema-validation", "--set", "config.drain.timeout=-1h"},
			`config.drain.timeout: "-1h" is not a non-negative Go duration`},
		{"unknown config key", []string{"--set", "config.drain.dealy=1s"}, "dealy"},
		{"unknown top-level key", []string{"--set", "replicas=3"}, "replicas"},
		{"chart-managed key in config", []string{"--set", "config.relay.address=10.0.0.1"}, "address"},
		{"no credentials", []string{"--set", "config.auth.secrets=null"}, "config.auth: set users or secrets"},
		{"tls without secret", []string{"--set", "tls.enabled=true"}, "tls.secretName: required"},
		{"no transport", []string{"--set", "transports.udp=false", "--set", "transports.tcp=false"}, "transports:"},
		{"one external IP, many pods", []string{"--set", "nat.externalIP=203.0.113.1"}, "nat.externalIP: one external address cannot front 2 nodes"},
		{"both NAT forms", []string{"--set", "replicaCount=1", "--set", "nat.externalIP=203.0.113.1", "--set", "nat.externalIPsByNode.n1=203.0.113.2"},
			"nat: set either"},
		{"more pods than NAT nodes", []string{"--set", "replicaCount=3", "--set", "nat.externalIPsByNode.n1=203.0.113.2"},
			"3 pods cannot fit on the 1 nodes"},
		{"per-node NAT with existingSecret", []string{"--set", "existingSecret=x", "--set", "replicaCount=1", "--set", "nat.externalIPsByNode.n1=203.0.113.2"},
			"nat.externalIPsByNode: needs the chart"},
		{"IPv6 address with IPv4 family", []string{"--set", "bindAddress=::"}, "set ipFamily: IPv6"},
	}
	base := valuesFile("defaults.values.yaml")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmTemplate(t, append([]string{"-f", base}, tc.args...)...)
			if err == nil {
				t.Fatalf("render succeeded, want an error containing %q:\n%s", tc.want, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not contain %q:\n%v", tc.want, err)
			}
		})
	}
}

// TestChecksumFollowsConfig: pods roll when turnd.yaml changes and only then.
func TestChecksumFollowsConfig(t *testing.T) {
	base := valuesFile("defaults.values.yaml")
	sum := func(args ...string) string {
		t.Helper()
		r := render(t, append([]string{"-f", base}, args...)...)
		s := r.statefulSet.Spec.Template.Annotations["checksum/config"]
		if s == "" {
			t.Fatal("no checksum/config annotation")
		}
		return s
	}
	orig := sum()
	for _, args := range [][]string{
		{"--set", "config.realm=other.example"},
		{"--set", "config.auth.secrets={rotated}"},
		{"--set", "config.drain.timeout=2h"},
		{"--set", "ports.turn=3479"},
		{"--set", "nat.externalIP=203.0.113.9", "--set", "replicaCount=1"},
	} {
		if got := sum(args...); got == orig {
			t.Errorf("checksum unchanged by %v: the config changed but pods would not roll", args)
		}
	}
	for _, args := range [][]string{
		{"--set", "resources.requests.cpu=2"},
		{"--set", "replicaCount=5"},
		{"--set", "podAnnotations.team=rtc"},
	} {
		if got := sum(args...); got != orig {
			t.Errorf("checksum changed by %v, which does not touch turnd.yaml", args)
		}
	}
}
