package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// socketDrops sums the drops column of /proc/net/udp and udp6 over the UDP
// sockets pid holds: the datagrams the kernel dropped at those sockets (a
// full receive buffer above all), however busy the rest of the machine is.
// A socket handed to a successor is the same kernel socket, so its count
// goes on in the successor's sum.
func socketDrops(pid int) (int64, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("list sockets of pid %d: %w", pid, err)
	}
	inodes := make(map[string]bool, len(fds))
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if in, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(in, "]")] = true
		}
	}
	var sum int64
	for _, table := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		n, err := dropsOf(table, inodes)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// dropsOf sums the drops column of a /proc/net/udp table over the sockets
// whose inode is in inodes.
func dropsOf(table string, inodes map[string]bool) (int64, error) {
	f, err := os.Open(table)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", table, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	var sum int64
	for sc.Scan() {
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
		fs := strings.Fields(sc.Text())
		if len(fs) < 13 || !inodes[fs[9]] {
			continue
		}
		n, err := strconv.ParseInt(fs[len(fs)-1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read %s: drops %q: %w", table, fs[len(fs)-1], errParse)
		}
		sum += n
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", table, err)
	}
	return sum, nil
}
