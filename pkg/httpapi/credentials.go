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
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrBadUser):
			code = http.StatusBadRequest
		case errors.Is(err, ErrUnavailable):
			code = http.StatusServiceUnavailable
		}
		http.Error(w, "credentials: "+err.Error(), code)
		return
	}
	if creds.URIs == nil {
		creds.URIs = []string{}
	}
	// A password must not sit in a proxy's or a browser's cache.
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, creds)
}
