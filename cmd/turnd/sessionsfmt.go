package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnd/turnd/pkg/httpapi"
)

// formatSessions renders sessions as an aligned table, one per line.
func formatSessions(sessions []httpapi.Session, now time.Time) string {
	if len(sessions) == 0 {
		return "no live allocations\n"
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tUSER\tCLIENT\tTRANSPORT\tAGE\tTO PEER\tFROM PEER\tPERMS\tCHANS")
	for _, s := range sessions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.ID, s.User, s.Client, s.Transport,
			now.Sub(s.StartedAt).Round(time.Second), bytesSI(s.ToPeerBytes), bytesSI(s.FromPeerBytes),
			s.Permissions, s.Channels)
	}
	_ = w.Flush()
	return b.String()
}

// formatFleetSessions renders every node's sessions as a table led by the
// node. Other nodes publish no traffic, so the table shows none.
func formatFleetSessions(sessions []httpapi.Session, now time.Time) string {
	if len(sessions) == 0 {
		return "no live allocations in the fleet\n"
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tID\tUSER\tCLIENT\tTRANSPORT\tAGE")
	for _, s := range sessions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Node, s.ID, s.User, s.Client, s.Transport,
			now.Sub(s.StartedAt).Round(time.Second))
	}
	_ = w.Flush()
	return b.String()
}
