package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/turnd/turnd/pkg/httpapi"
)

// maxSessionPages bounds how many pages `turnd sessions` fetches.
const maxSessionPages = 1000

// sessionsCmd prints a running turnd's live allocations, as a table or
// with --json as one document.
func sessionsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("turnd sessions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", "", "turnd's HTTP address, host:port (default: http.address of --config, else "+defaultHTTP+")")
	cfgPath := fs.String("config", "", "turnd config file to read http.address and http.admin_token_file from")
	tokenFile := fs.String("token-file", "", "file holding the admin token (default: http.admin_token_file of --config)")
	userName := fs.String("user", "", "only this user's allocations (REST credentials: the part after the expiry)")
	asJSON := fs.Bool("json", false, "print the sessions as one JSON document")
	fleet := fs.Bool("fleet", false, "every node's allocations, with a NODE column (the node must be in a fleet: fleet.redis)")
	fs.Usage = usage(fs, "turnd sessions [--http ADDR | --config FILE] [--token-file F] [--user U] [--fleet] [--json]",
		"Lists a running turnd's live allocations: who, from where, over which relay, for how long, and the\n"+
			"traffic so far. The ID column is what `turnd disconnect --id` takes (on the node that holds it).\n"+
			"With --fleet it lists every node's, as each last published them (within a third of fleet.lease),\n"+
			"without traffic: ask a node itself for its allocations' traffic.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "turnd sessions: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	c, err := newAdminClient(*httpAddr, *cfgPath, *tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "turnd sessions: %v\n", err)
		return 1
	}
	all, err := c.sessions(*userName, *fleet)
	if err != nil {
		fmt.Fprintf(stderr, "turnd sessions: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(all)
		return 0
	}
	if *fleet {
		fmt.Fprint(stdout, formatFleetSessions(all.Sessions, time.Now()))
		return 0
	}
	fmt.Fprint(stdout, formatSessions(all.Sessions, time.Now()))
	return 0
}

// sessions fetches every page of /sessions into one: this node's
// allocations, or with fleet every node's.
func (c *adminClient) sessions(user string, fleet bool) (httpapi.SessionPage, error) {
	all := httpapi.SessionPage{Sessions: []httpapi.Session{}}
	offset := 0
	for range maxSessionPages {
		q := url.Values{"offset": {strconv.Itoa(offset)}}
		if user != "" {
			q.Set("user", user)
		}
		if fleet {
			q.Set("scope", "fleet")
		}
		body, err := c.do(http.MethodGet, "/sessions?"+q.Encode())
		if err != nil {
			return all, err
		}
		var page httpapi.SessionPage
		if err := json.Unmarshal(body, &page); err != nil {
			return all, fmt.Errorf("decode /sessions: %w", err)
		}
		all.Total = page.Total
		all.Sessions = append(all.Sessions, page.Sessions...)
		if page.NextOffset == nil {
			return all, nil
		}
		offset = *page.NextOffset
	}
	return all, nil
}

// disconnectCmd ends allocations of a running turnd, by user or by ID.
func disconnectCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("turnd disconnect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", "", "turnd's HTTP address, host:port (default: http.address of --config, else "+defaultHTTP+")")
	cfgPath := fs.String("config", "", "turnd config file to read http.address and http.admin_token_file from")
	tokenFile := fs.String("token-file", "", "file holding the admin token (default: http.admin_token_file of --config)")
	userName := fs.String("user", "", "end every allocation of this user")
	id := fs.String("id", "", "end the allocation with this ID (its relay address, from turnd sessions)")
	fs.Usage = usage(fs, "turnd disconnect [--http ADDR | --config FILE] [--token-file F] (--user U | --id ID)",
		"Ends live allocations at once: their relays stop, and each client's next request gets 437.\n"+
			"turnd logs who asked, and a usage record per allocation with reason disconnected.\n"+
			"In a fleet (fleet.redis), --user ends the user's allocations on every node; --id only on this one.\n"+
			"A client with valid credentials may allocate again: revoke its credentials too.")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 || (*userName == "") == (*id == "") {
		fmt.Fprintln(stderr, "turnd disconnect: give exactly one of --user and --id")
		return 2
	}
	c, err := newAdminClient(*httpAddr, *cfgPath, *tokenFile)
	if err != nil {
		fmt.Fprintf(stderr, "turnd disconnect: %v\n", err)
		return 1
	}
	q := url.Values{}
	if *userName != "" {
		q.Set("user", *userName)
	} else {
		q.Set("id", *id)
	}
	body, err := c.do(http.MethodPost, "/sessions/disconnect?"+q.Encode())
	if err != nil {
		fmt.Fprintf(stderr, "turnd disconnect: %v\n", err)
		return 1
	}
	var got httpapi.Disconnected
	if err := json.Unmarshal(body, &got); err != nil {
		fmt.Fprintf(stderr, "turnd disconnect: decode answer: %v\n", err)
		return 1
	}
	return reportDisconnect(got, *userName, stdout, stderr)
}

// reportDisconnect prints what a disconnect ended and its exit code: 1 if
// nothing matched on a single node, or if the fleet did not take it.
func reportDisconnect(got httpapi.Disconnected, user string, stdout, stderr io.Writer) int {
	switch {
	case !got.Fleet && got.Disconnected == 0:
		fmt.Fprintln(stderr, "turnd disconnect: no live allocation matched")
		return 1
	case !got.Fleet:
		fmt.Fprintf(stdout, "disconnected %s\n", plural(got.Disconnected, "allocation"))
		return 0
	case got.FleetError != "":
		fmt.Fprintf(stdout, "disconnected %s on this node\n", plural(got.Disconnected, "allocation"))
		fmt.Fprintf(stderr, "turnd disconnect: the other nodes were not asked, they keep %s's allocations: %s\n",
			user, got.FleetError)
		return 1
	}
	// Other nodes end theirs on their own: how many is in their logs.
	fmt.Fprintf(stdout, "disconnected %s on this node; every node of the fleet was asked to end %s's\n",
		plural(got.Disconnected, "allocation"), user)
	return 0
}
