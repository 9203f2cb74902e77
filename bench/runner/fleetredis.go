package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// redisReadyWait bounds how long a fresh redis-server may take to answer.
const redisReadyWait = 10 * time.Second

// redisServer is the fleet scenario's own redis-server: a unix socket in
// the run's directory, no TCP port, nothing saved to disk.
type redisServer struct {
	proc   *process
	socket string
}

// startRedis starts redis-server in dir and waits until it answers PING.
func startRedis(ctx context.Context, bin, dir string) (*redisServer, error) {
	sock := filepath.Join(dir, "redis.sock")
	p, err := start("redis-server", filepath.Join(dir, "redis.out"), bin,
		"--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err != nil {
		return nil, err
	}
	r := &redisServer{proc: p, socket: sock}
	deadline := time.Now().Add(redisReadyWait)
	for {
		if _, err := r.command("PING"); err == nil {
			return r, nil
		}
		if p.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			r.stop()
			return nil, fmt.Errorf("redis-server on %s after %v: %w", sock, redisReadyWait, errNotReady)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *redisServer) url() string { return "unix://" + r.socket }

func (r *redisServer) stop() { r.proc.stop(syscall.SIGTERM) }

// command sends one inline command and returns its reply's payload: a
// status line, or a bulk string (INFO's answer).
func (r *redisServer) command(cmd string) (string, error) {
	c, err := net.DialTimeout("unix", r.socket, time.Second)
	if err != nil {
		return "", fmt.Errorf("dial redis: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", fmt.Errorf("send %s: %w", cmd, err)
	}
	br := bufio.NewReader(c)
	head, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read %s reply: %w", cmd, err)
	}
	head = strings.TrimRight(head, "\r\n")
	switch {
	case strings.HasPrefix(head, "+"):
		return head[1:], nil
	case strings.HasPrefix(head, "$"):
		n, err := strconv.Atoi(head[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("redis %s: reply %q: %w", cmd, head, errParse)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", fmt.Errorf("read %s reply: %w", cmd, err)
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("redis %s: reply %q: %w", cmd, head, errParse)
}

// redisCalls is INFO commandstats as command -> calls.
func (r *redisServer) calls() (map[string]int64, error) {
	info, err := r.command("INFO commandstats")
	if err != nil {
		return nil, err
	}
	return parseCommandStats(info), nil
}

// parseCommandStats reads "cmdstat_NAME:calls=N,..." lines.
func parseCommandStats(info string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					out[strings.TrimPrefix(name, "cmdstat_")] = n
				}
			}
		}
	}
	return out
}

// scriptCalls is how many Lua scripts ran (EVALSHA, and EVAL when a
// script was not cached yet) between two commandstats readings.
func scriptCalls(before, after map[string]int64) int64 {
	var n int64
	for _, c := range []string{"evalsha", "eval"} {
		n += after[c] - before[c]
	}
	return n
}
