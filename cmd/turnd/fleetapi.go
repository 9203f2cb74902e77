package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnd/turnd/pkg/fleet"
	"github.com/turnd/turnd/pkg/httpapi"
	"github.com/turnd/turnd/pkg/metrics"
	"github.com/turnd/turnd/pkg/server"
)

// fleetServer is what the fleet endpoints and metrics read of the TURN
// server (*server.Server).
type fleetServer interface {
	FleetSessions(ctx context.Context) ([]fleet.Session, error)
	FleetDisconnect(ctx context.Context, user, by string) error
	Credentials(ctx context.Context, user string) (server.Credentials, error)
	FleetStats() (server.FleetStats, bool)
}

var _ fleetServer = (*server.Server)(nil)

// fleetAPI is the fleet part of the HTTP endpoints over srv, with
// GET /credentials guarded by the token in tokenFile ("" leaves it off).
// A server in no fleet gets the zero value: its endpoints stay those of a
// single node. srv's fleet is known once it is built, so call it after
// server.New.
func fleetAPI(srv fleetServer, tokenFile string) httpapi.Fleet {
	if _, on := srv.FleetStats(); !on {
		return httpapi.Fleet{}
	}
	return httpapi.Fleet{
		Sessions: func(ctx context.Context) ([]httpapi.FleetSession, error) {
			list, err := srv.FleetSessions(ctx)
			if err != nil {
				return nil, err
			}
			out := make([]httpapi.FleetSession, len(list))
			for i, s := range list {
				out[i] = httpapi.FleetSession{Node: s.Node, ID: s.ID, User: s.User, Client: s.Client,
					Transport: s.Transport, Relay: s.Relay, StartedAt: s.StartedAt}
			}
			return out, nil
		},
		Disconnect: srv.FleetDisconnect,
		Credentials: func(ctx context.Context, user string) (httpapi.Credentials, error) {
			c, err := srv.Credentials(ctx, user)
			switch {
			case errors.Is(err, server.ErrBadUser):
				return httpapi.Credentials{}, fmt.Errorf("%w: %w", httpapi.ErrBadUser, err)
			case err != nil:
				// Redis down, no node ready, no secret to sign with: each is
				// the fleet unable to answer now.
				return httpapi.Credentials{}, fmt.Errorf("%w: %w", httpapi.ErrUnavailable, err)
			}
			return httpapi.Credentials{Username: c.Username, Password: c.Password, TTL: c.TTL, URIs: c.URIs}, nil
		},
		CredentialsTokenFile: tokenFile,
		Status: func() *httpapi.FleetStatus {
			st, on := srv.FleetStats()
			if !on {
				return nil
			}
			return &httpapi.FleetStatus{Node: st.Node, Up: st.Up, Error: st.Err, Outages: st.Outages, Held: st.Held,
				UsageQueued: st.UsageQueued, UsageDropped: st.UsageDropped, OnOutage: st.OnOutage}
		},
	}
}

// fleetMetrics is the metrics' Fleet source over srv; false in no fleet.
func fleetMetrics(srv fleetServer) (metrics.FleetStats, bool) {
	st, on := srv.FleetStats()
	if !on {
		return metrics.FleetStats{}, false
	}
	return metrics.FleetStats{Up: st.Up, Outages: st.Outages, Held: st.Held, UsageQueued: st.UsageQueued,
		UsageDropped: st.UsageDropped, Admitted: st.Admitted, Refused: st.Refused, Fallback: st.Fallback}, true
}
