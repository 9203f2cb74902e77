package config_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

// chartManaged are the keys the chart renders itself (_config.tpl) from
// its own values: addresses, ports and file paths.
var chartManaged = map[string]bool{
	"listen.udp": true, "listen.tcp": true, "listen.tls": true, "listen.tcp_tls": true, "listen.proxy_protocol": true,
	"relay.address": true, "relay.external_address": true, "tls": true, "http": true, "pidfile": true,
}

// TestHelmSchemaKnowsEveryKey: the chart's values schema refuses unknown
// keys under config, so a key it lacks is a setting Helm users cannot make.
func TestHelmSchemaKnowsEveryKey(t *testing.T) {
	b, err := os.ReadFile("../../deploy/helm/turnd/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	cfg := schemaAt(t, schema, "properties", "config")
	for _, missing := range missingKeys(reflect.TypeOf(config.Config{}), cfg, "") {
		t.Errorf("deploy/helm/turnd/values.schema.json: config.%s is missing", missing)
	}
}

// missingKeys lists the YAML paths of typ's fields that the object schema s
// does not name, descending into structs the schema describes.
func missingKeys(typ reflect.Type, s map[string]any, prefix string) []string {
	props, _ := s["properties"].(map[string]any)
	var missing []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		sub, ok := props[key].(map[string]any)
		if chartManaged[prefix+key] {
			if ok {
				missing = append(missing, prefix+key+" (set by the chart, yet in the schema)")
			}
			continue
		}
		if !ok {
			missing = append(missing, prefix+key)
			continue
		}
		if f.Type.Kind() == reflect.Struct && sub["properties"] != nil {
			missing = append(missing, missingKeys(f.Type, sub, prefix+key+".")...)
		}
	}
	return missing
}

func schemaAt(t *testing.T, s map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		next, ok := s[p].(map[string]any)
		if !ok {
			t.Fatalf("values.schema.json has no %s", strings.Join(path, "."))
		}
		s = next
	}
	return s
}
