package server_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/testturn"
)

// TestDefaultsRefuseFarREST: with the default auth.max_rest_validity, a REST
// username that expires in year 9999 is refused like a wrong password, with
// a warning line that tells the operator why, while one valid for a day
// works.
func TestDefaultsRefuseFarREST(t *testing.T) {
	var log lineLog
	opts := testOptions()
	opts.Logger = log.logger()
	opts.Config.Auth.Secrets = []string{"secret"}
	s := start(t, opts)
	rest := func(user string) *testturn.Client {
		return dialAs(t, s, "udp", user, auth.RESTPassword("secret", user))
	}
	if code := testturn.ErrorCode(rest("253402300799:mallory").Allocate()); code != 401 {
		t.Fatalf("a REST username valid until year 9999: %d, want 401", code)
	}
	const warning = "REST credential expires further ahead than auth.max_rest_validity"
	if lines := log.matching(warning); len(lines) != 1 || lines[0].attrs["user"] != "253402300799:mallory" {
		t.Errorf("warning lines %v, want one naming the username", lines)
	}
	day := strconv.FormatInt(time.Now().Add(24*time.Hour).Unix(), 10) + ":alice"
	if code := testturn.ErrorCode(rest(day).Allocate()); code != 0 {
		t.Fatalf("a REST username valid for a day: %d, want success", code)
	}
}

// TestDefaultUserQuota: the default limits.user_allocations stops one user
// (one leaked credential) well before the relay range, with 486.
func TestDefaultUserQuota(t *testing.T) {
	opts := testOptions()
	opts.Config.Limits.UnauthenticatedRate = 0 // one client host allocates on purpose
	quota := opts.Config.Limits.UserAllocations
	if quota <= 0 || quota > 1024 {
		t.Fatalf("default user_allocations %d: want a cap well under the relay range", quota)
	}
	// The default allocate rate's burst lets a user fill its quota at once,
	// so the quota is what a fresh user meets; only the quota is tested here.
	if _, burst := opts.Config.Limits.AllocateRate(); burst < quota {
		t.Fatalf("default user_allocate_rate's burst %d is under the default user_allocations %d", burst, quota)
	}
	opts.Config.Limits.UserAllocateRate = 0
	s := start(t, opts)
	for i := range quota {
		if code := testturn.ErrorCode(dial(t, s, "udp").Allocate()); code != 0 {
			t.Fatalf("allocation %d of %d: %d", i+1, quota, code)
		}
	}
	if code := testturn.ErrorCode(dial(t, s, "udp").Allocate()); code != 486 {
		t.Fatalf("allocation past the default user quota: %d, want 486", code)
	}
}
