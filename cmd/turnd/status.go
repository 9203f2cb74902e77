package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/httpapi"
)

const (
	// defaultHTTP is turnd's default http.address.
	defaultHTTP = "127.0.0.1:9641"
	// requestTimeout bounds one /status request: turnd answers it from
	// memory, so a slow answer means something is wrong.
	requestTimeout = 2 * time.Second
)

// statusCmd prints a running turnd's /status: a human summary, or with
// --json the document itself.
func statusCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("turnd status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", "", "turnd's HTTP address, host:port (default: http.address of --config, else "+defaultHTTP+")")
	cfgPath := fs.String("config", "", "turnd config file to read http.address from")
	asJSON := fs.Bool("json", false, "print the /status JSON document as turnd sent it")
	fs.Usage = usage(fs, "turnd status [--http ADDR | --config FILE] [--json]",
		"Prints a running turnd's state, allocations by transport, relayed traffic, its fleet (Redis up or\n"+
			"down, allocations held fleet-wide) and, while it drains, the allocations left and the time to its deadline.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "turnd status: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	addr, err := httpTarget(*httpAddr, *cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "turnd status: %v\n", err)
		return 1
	}
	raw, st, err := fetchStatus(&http.Client{Timeout: requestTimeout}, addr)
	if err != nil {
		fmt.Fprintf(stderr, "turnd status: %v\n", err)
		return 1
	}
	if *asJSON {
		_, _ = stdout.Write(raw)
		return 0
	}
	fmt.Fprint(stdout, formatStatus(st, addr, time.Now()))
	return 0
}

// usage prints a synopsis, a description and the flags.
func usage(fs *flag.FlagSet, synopsis, about string) func() {
	return func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\n\n", synopsis, about)
		fs.PrintDefaults()
	}
}

// parseExit is the exit code for a flag parse error: 0 for -h, else 2.
func parseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// httpTarget picks the address of turnd's HTTP listener: --http, else the
// config's http.address, else turnd's default. A wildcard host (0.0.0.0,
// [::]) is reached through loopback.
func httpTarget(flagAddr, cfgPath string) (string, error) {
	addr := flagAddr
	if addr == "" && cfgPath != "" {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return "", err
		}
		if cfg.HTTP.Address == "" {
			return "", fmt.Errorf("%s: %w", cfgPath, errNoHTTP)
		}
		addr = cfg.HTTP.Address
	}
	if addr == "" {
		addr = defaultHTTP
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("http address %q: %w", addr, err)
	}
	if port == "0" {
		return "", fmt.Errorf("http address %q: port 0 is chosen at start: pass --http with the real port", addr)
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if err == nil && ip.Is6() {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port), nil
}

// fetchStatus GETs /status and returns the document raw and decoded.
func fetchStatus(client *http.Client, addr string) ([]byte, httpapi.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/status", nil)
	if err != nil {
		return nil, httpapi.Status{}, fmt.Errorf("build request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, httpapi.Status{}, fmt.Errorf("get /status: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, httpapi.Status{}, fmt.Errorf("read /status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, httpapi.Status{}, fmt.Errorf("get /status: %s", resp.Status)
	}
	var st httpapi.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, httpapi.Status{}, fmt.Errorf("decode /status: %w", err)
	}
	return raw, st, nil
}
