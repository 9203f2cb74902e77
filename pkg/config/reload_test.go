package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReloadKeepsExactlyWhatItReports changes every setting alone and checks
// that Reload either keeps it and reports its path, or applies it and reports
// nothing: what is kept and what is logged cannot drift apart.
func TestReloadKeepsExactlyWhatItReports(t *testing.T) {
	kept := map[string]bool{
		"realm": true, "listen.udp": true, "listen.tcp": true, "listen.tls": true, "listen.tcp_tls": true,
		"listen.proxy_protocol.listeners": true, "listen.proxy_protocol.trusted": true,
		"listen.udp_sockets": true, "listen.socket_buffer": true,
		"relay.address": true, "relay.external_address": true, "relay.min_port": true, "relay.max_port": true,
		"limits.permission_lifetime": true, "limits.channel_lifetime": true,
		"relay.offload": true, "relay.offload_interfaces": true,
		"handover.socket": true, "http.address": true, "http.admin_token_file": true, "http.metrics_users": true, "pidfile": true,
		"fleet.redis": true, "fleet.password_file": true, "fleet.ca_file": true, "fleet.node": true, "fleet.prefix": true,
		"fleet.lease": true, "fleet.timeout": true, "fleet.advertise": true, "fleet.credentials.token_file": true,
	}
	leaves := 0
	for _, path := range keyPaths(reflect.TypeFor[Config](), "") {
		running, next := Embedded(), Embedded()
		if !changeLeaf(reflect.ValueOf(&next).Elem(), strings.Split(path, ".")) {
			continue // a section: its leaves are changed one by one
		}
		leaves++
		apply, restart := Reload(running, next)
		if kept[path] {
			if !slices.Equal(restart, []string{path}) || !reflect.DeepEqual(apply, running) {
				t.Errorf("%s changed: restart needed %q, applied changed: %v; want it reported and kept", path, restart, !reflect.DeepEqual(apply, running))
			}
			continue
		}
		if restart != nil || !reflect.DeepEqual(apply, next) {
			t.Errorf("%s changed: restart needed %q, applied as given: %v; want it applied and not reported", path, restart, reflect.DeepEqual(apply, next))
		}
	}
	if leaves < len(kept) {
		t.Fatalf("changed %d settings, fewer than the %d kept ones", leaves, len(kept))
	}
}

func TestReloadOrderAndEmptyLists(t *testing.T) {
	running, next := Embedded(), Embedded()
	next.Listen.TLS = []string{} // nil in running: the same setting
	next.PIDFile, next.Realm, next.Listen.UDP = "/run/turnd.pid", "other", append(next.Listen.UDP, "127.0.0.1:3479")
	next.Auth.Users = map[string]string{"bob": "x"}
	apply, restart := Reload(running, next)
	if want := []string{"realm", "listen.udp", "pidfile"}; !slices.Equal(restart, want) {
		t.Errorf("restart needed %q, want %q in file order", restart, want)
	}
	if !reflect.DeepEqual(apply.Auth.Users, next.Auth.Users) || apply.Realm != running.Realm {
		t.Errorf("applied users %v realm %q, want the new users and the running realm", apply.Auth.Users, apply.Realm)
	}
}

// changeLeaf gives the setting at path a value different from its current
// one, and reports false when path is a section rather than a setting.
func changeLeaf(v reflect.Value, path []string) bool {
	for i := 0; i < v.NumField(); i++ {
		if yamlName(v.Type().Field(i)) != path[0] {
			continue
		}
		f := v.Field(i)
		if len(path) > 1 {
			return changeLeaf(f, path[1:])
		}
		if f.Kind() == reflect.Struct {
			return false
		}
		changeValue(f)
		return true
	}
	panic("changeLeaf: no field " + path[0])
}

// changeValue gives f a value different from its current one.
func changeValue(f reflect.Value) {
	switch f.Kind() {
	case reflect.String:
		f.SetString(f.String() + "x")
	case reflect.Bool:
		f.SetBool(!f.Bool())
	case reflect.Int, reflect.Int64:
		if f.Type() == reflect.TypeFor[time.Duration]() {
			f.SetInt(f.Int() + int64(time.Second))
		} else {
			f.SetInt(f.Int() + 1)
		}
	case reflect.Slice:
		f.Set(reflect.Append(f, reflect.ValueOf("x")))
	case reflect.Map:
		m := reflect.MakeMap(f.Type())
		v := reflect.New(f.Type().Elem()).Elem()
		changeValue(v)
		m.SetMapIndex(reflect.ValueOf("x"), v)
		f.Set(m)
	default:
		panic("changeValue: unhandled kind " + f.Kind().String())
	}
}
