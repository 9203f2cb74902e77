package httpapi

import (
	"errors"
	"net/http"
)

// GET /credentials is for an application backend, not for operators: its
// token (fleet.credentials.token_file) only gets short-lived TURN
// credentials, never sessions or disconnects, so it is a token of its own.

func (a *API) credentials(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("user")
	if user == "" {
		http.Error(w, "give the user to make credentials for: ?user=", http.StatusBadRequest)
		return
	}
	creds, err := a.opts.Fleet.Credentials(r.Context(), user)
	if err != nil {
		// Fixed texts: the backend that asks must not learn Redis's
		// address or its errors; the operator's log has them.
		code, text := http.StatusInternalServerError, "credentials: internal error"
		switch {
		case errors.Is(err, ErrBadUser):
			code, text = http.StatusBadRequest, "credentials: not a user name a TURN username can carry"
		case errors.Is(err, ErrUnavailable):
			code, text = http.StatusServiceUnavailable, "credentials: the fleet cannot name a ready node now"
		}
		if a.opts.Admin.Problem != nil {
			a.opts.Admin.Problem(err)
		}
		http.Error(w, text, code)
		return
	}
	if creds.URIs == nil {
		creds.URIs = []string{}
	}
	// A password must not sit in a proxy's or a browser's cache.
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, creds)
}
