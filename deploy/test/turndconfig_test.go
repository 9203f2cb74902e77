package deploytest

import (
	"math"
	"sort"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// turndConfig is the part of turnd.yaml these tests look at. It is decoded
// leniently on purpose: turnd's own strict decoding is exercised through
// `turnd check-config` (see checkconfig_test.go), not mirrored here.
type turndConfig struct {
	Listen struct {
		UDP           []string `json:"udp"`
		TCP           []string `json:"tcp"`
		TLS           []string `json:"tls"`
		TCPTLS        []string `json:"tcp_tls"`
		ProxyProtocol struct {
			Listeners []string `json:"listeners"`
			Trusted   []string `json:"trusted"`
		} `json:"proxy_protocol"`
	} `json:"listen"`
	TLS struct {
		CertFile string `json:"cert_file"`
		KeyFile  string `json:"key_file"`
	} `json:"tls"`
	Relay struct {
		Address         string `json:"address"`
		ExternalAddress string `json:"external_address"`
		Offload         string `json:"offload"`
	} `json:"relay"`
	Auth struct {
		Users   map[string]string `json:"users"`
		Secrets []string          `json:"secrets"`
	} `json:"auth"`
	Drain struct {
		Timeout          string   `json:"timeout"`
		Delay            string   `json:"delay"`
		AlternateServers []string `json:"alternate_servers"`
	} `json:"drain"`
	HTTP struct {
		Address        string `json:"address"`
		AdminTokenFile string `json:"admin_token_file"`
	} `json:"http"`
	Handover *struct {
		Socket  string `json:"socket"`
		Timeout string `json:"timeout"`
		After   string `json:"after"`
	} `json:"handover"` // nil: the section is absent
	PIDFile string `json:"pidfile"`
	Fleet   *struct {
		Redis        string   `json:"redis"`
		PasswordFile string   `json:"password_file"`
		Node         string   `json:"node"`
		OnOutage     string   `json:"on_outage"`
		Advertise    []string `json:"advertise"`
		Credentials  struct {
			TokenFile string `json:"token_file"`
			TTL       string `json:"ttl"`
		} `json:"credentials"`
	} `json:"fleet"` // nil: the section is absent
}

func parseTurndConfig(t *testing.T, data []byte) turndConfig {
	t.Helper()
	var c turndConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("parse turnd.yaml: %v\n%s", err, data)
	}
	return c
}

// drainSeconds is ceil(delay + timeout) in seconds, by Go's own duration
// parser: the oracle for the chart's template arithmetic.
func (c turndConfig) drainSeconds(t *testing.T) int64 {
	t.Helper()
	return goDrainSeconds(t, c.Drain.Delay, c.Drain.Timeout)
}

func goDrainSeconds(t *testing.T, delay, timeout string) int64 {
	t.Helper()
	var total time.Duration
	for _, s := range []string{delay, timeout} {
		if s == "" {
			t.Fatal("drain.delay or drain.timeout missing from the config")
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("parse drain duration: %v", err)
		}
		total += d
	}
	return int64(math.Ceil(total.Seconds()))
}

// configFiles returns the rendered Secret's files (name -> content), sorted
// by name.
func (r rendered) configFiles(t *testing.T) (names []string, files map[string][]byte) {
	t.Helper()
	if r.secret == nil {
		t.Fatal("no config Secret rendered")
	}
	files = r.secret.Data
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, files
}
