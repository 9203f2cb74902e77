package deploytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fleetValues = "fleet.values.yaml"

// checkFleet is the fleet case of chartCases: the address as given, the
// two Secrets mounted whole and read-only, their files named in the
// config, the passed-through keys kept, and the node left to turnd (the
// hostname, the node's on the host network).
func checkFleet(t *testing.T, r rendered) {
	c := onlyConfig(t, r)
	if c.Fleet == nil {
		t.Fatal("no fleet section in turnd.yaml")
	}
	wantEqual(t, "fleet.redis", c.Fleet.Redis, "rediss://turnd@redis.rtc.svc.cluster.local:6380/0")
	wantEqual(t, "fleet.password_file", c.Fleet.PasswordFile, "/etc/turnd/fleet/redis-password")
	wantEqual(t, "fleet.credentials.token_file", c.Fleet.Credentials.TokenFile, "/etc/turnd/fleet-credentials/token")
	wantEqual(t, "fleet.credentials.ttl", c.Fleet.Credentials.TTL, "30m")
	wantEqual(t, "fleet.on_outage", c.Fleet.OnOutage, "refuse")
	wantEqual(t, "fleet.node", c.Fleet.Node, "")
	// The fleet's own least-loaded redirect, not the headless Service.
	wantList(t, "drain.alternate_servers", c.Drain.AlternateServers)
	wantVolume(t, r, "fleet-redis", "turnd-redis", "/etc/turnd/fleet")
	wantVolume(t, r, "fleet-credentials", "turnd-credentials", "/etc/turnd/fleet-credentials")
}

// TestChartFleetGolden: fleet on renders as testdata/golden/fleet.yaml, in
// drain and in hand-over mode (TURND_UPDATE_GOLDEN=1 rewrites the files
// after an intended change); with fleet off the defaults' golden file
// (TestChartOffloadOffRendersAsBefore) holds, whatever the other fleet
// values say, and nothing of the fleet is rendered.
func TestChartFleetGolden(t *testing.T) {
	for name, args := range map[string][]string{
		"fleet":          {"-f", valuesFile(fleetValues)},
		"fleet-handover": {"-f", valuesFile("handover.values.yaml"), "-f", valuesFile(fleetValues)},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := helmTemplate(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			matchGolden(t, name, out, "fleet")
		})
	}
	t.Run("off", func(t *testing.T) {
		out, err := helmTemplate(t, "-f", valuesFile("defaults.values.yaml"), "--set", "fleet.redis=",
			"--set", "fleet.secretKey=other", "--set", "fleet.node=ignored", "--set", "fleet.credentials.secretKey=other")
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", "golden", "defaults.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("fleet off renders differently from the defaults:\n%s", firstDiff(string(want), out))
		}
		if c := onlyConfig(t, decodeAll(t, out)); c.Fleet != nil {
			t.Errorf("fleet off renders a fleet section: %+v", *c.Fleet)
		}
	})
}

// TestChartFleetHandoverKeepsTheNodeName: in hand-over mode the old pod and
// its successor must be one fleet node (the successor takes the node's
// counts over), so the chart leaves fleet.node to the hostname they share;
// a name given in the values is used as given.
func TestChartFleetNodeName(t *testing.T) {
	r := render(t, "-f", valuesFile("handover.values.yaml"), "-f", valuesFile(fleetValues))
	if c := onlyConfig(t, r); c.Fleet == nil || c.Fleet.Node != "" {
		t.Errorf("hand-over mode: fleet section %+v, want fleet.node unset (the hostname)", c.Fleet)
	}
	r = render(t, "-f", valuesFile(fleetValues), "--set", "fleet.node=turn-a")
	wantEqual(t, "fleet.node", onlyConfig(t, r).Fleet.Node, "turn-a")
}

// TestChartFleetRefuses: combinations that cannot work fail the render or
// the schema, with a message naming the value.
func TestChartFleetRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"secret without redis", []string{"-f", valuesFile("defaults.values.yaml"), "--set", "fleet.existingSecret=s"},
			"fleet.existingSecret / fleet.credentials.existingSecret: need fleet.redis"},
		{"token without redis", []string{"-f", valuesFile("defaults.values.yaml"), "--set", "fleet.credentials.existingSecret=s"},
			"fleet.existingSecret / fleet.credentials.existingSecret: need fleet.redis"},
		{"credentials without REST secrets", []string{"-f", valuesFile(fleetValues), "--set", "config.auth.secrets=null",
			"--set", "config.auth.users.alice=pw"}, "fleet.credentials.existingSecret: GET /credentials signs"},
		{"redis twice", []string{"-f", valuesFile(fleetValues), "--set", "config.fleet.redis=redis://other:6379"},
			"fleet.redis and config.fleet.redis"},
		{"with existingSecret", []string{"-f", valuesFile("existing-secret.values.yaml"), "--set", "fleet.redis=redis://r:6379"},
			"fleet.redis: the chart renders no turnd.yaml with existingSecret"},
		{"password in the URL", []string{"-f", valuesFile(fleetValues), "--set", "fleet.redis=redis://u:secret@r:6379/0"},
			"fleet.redis"},
		{"not a redis URL", []string{"-f", valuesFile(fleetValues), "--set", "fleet.redis=http://r:6379"}, "fleet.redis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmTemplate(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render: %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
}

// TestChartFleetAdvertisesTheNATAddress: behind NAT the listeners hold the
// node's private address, so the chart advertises the public one (each
// family, each transport); a list in config.fleet.advertise is kept.
func TestChartFleetAdvertisesTheNATAddress(t *testing.T) {
	r := render(t, "-f", valuesFile("nat-single.values.yaml"), "--set", "fleet.redis=redis://r:6379/0",
		"--set", "nat.externalIP=198.51.100.7\\,2001:db8::7", "--set", "tls.enabled=true", "--set", "tls.secretName=t")
	wantList(t, "fleet.advertise", onlyConfig(t, r).Fleet.Advertise,
		"turn:198.51.100.7:3478?transport=udp", "turns:198.51.100.7:5349?transport=tcp",
		"turn:[2001:db8::7]:3478?transport=udp", "turns:[2001:db8::7]:5349?transport=tcp")

	names, files := render(t, "-f", valuesFile("nat-by-node.values.yaml"), "--set", "fleet.redis=redis://r:6379/0").configFiles(t)
	for _, name := range names {
		c := parseTurndConfig(t, files[name])
		if name == "turnd-node-b.yaml" {
			wantList(t, name+" fleet.advertise", c.Fleet.Advertise,
				"turn:203.0.113.11:3478?transport=udp", "turn:203.0.113.11:3478?transport=tcp")
		}
		if len(c.Fleet.Advertise) != 2 {
			t.Errorf("%s: fleet.advertise = %q, want the node's public address twice", name, c.Fleet.Advertise)
		}
	}

	r = render(t, "-f", valuesFile("nat-single.values.yaml"), "--set", "fleet.redis=redis://r:6379/0",
		"--set", "config.fleet.advertise[0]=turn:turn.example.org:3478")
	wantList(t, "fleet.advertise", onlyConfig(t, r).Fleet.Advertise, "turn:turn.example.org:3478")

	r = render(t, "-f", valuesFile(fleetValues))
	wantList(t, "fleet.advertise without NAT", onlyConfig(t, r).Fleet.Advertise)
}
