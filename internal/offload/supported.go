package offload

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Supported returns nil when the kernel path can run here, else why not (an
// error wrapping ErrUnsupported, and one of ErrPrivilege, ErrNoTCX,
// ErrVerifier or ErrForwarding). It loads the program once, with small
// tables, and attaches nothing.
func Supported() error {
	if err := checkCaps(); err != nil {
		return err
	}
	var objs relayObjects
	if err := load(&objs, 1, 1, 1, 0); err != nil {
		return err
	}
	defer objs.Close()
	// An attachment to an interface that cannot exist fails with ENODEV
	// where tcx is there, before anything is attached.
	l, err := link.AttachTCX(link.TCXOptions{Interface: math.MaxInt32, Program: objs.Relay, Attach: ebpf.AttachTCXIngress})
	if err == nil {
		l.Close()
	} else if !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("probe tcx: %w: %w", ErrNoTCX, err)
	}
	return checkForwarding()
}

// checkCaps wants CAP_NET_ADMIN and CAP_BPF (or CAP_SYS_ADMIN, which
// kernels before 5.8 asked for instead) in the effective set.
func checkCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if !has(unix.CAP_NET_ADMIN) || !(has(unix.CAP_BPF) || has(unix.CAP_SYS_ADMIN)) {
		return ErrPrivilege
	}
	return nil
}

// checkForwarding wants forwarding on lo for each family the kernel has: the
// program's route lookup is made as for locally sent traffic (input
// interface lo), and the kernel refuses a lookup for an interface that does
// not forward. Only lo needs it, so the host does not become a router.
func checkForwarding() error {
	for _, f := range []string{"/proc/sys/net/ipv4/conf/lo/forwarding", "/proc/sys/net/ipv6/conf/lo/forwarding"} {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6 here
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", f, err)
		}
		if strings.TrimSpace(string(b)) == "0" {
			return fmt.Errorf("%s is 0: %w", f, ErrForwarding)
		}
	}
	return nil
}
