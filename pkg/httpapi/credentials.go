package httpapi

import (
	"errors"
	"net/http"
)

// GET /credentials is for an application backend, not for operators: its
// token (fleet.credentials.token_file) only gets short-lived TURN
// credentials, never sessions or disconnects, so it is a token of its own.

// maxCredentialUser bounds the user of a credential: a STUN USERNAME holds
// under 513 bytes, and the expiry with its colon takes up to 21 of them.
const maxCredentialUser = 490

func (a *API) credentials(w http.ResponseWriter, r *http.Request) {
	user := r.URL.Query().Get("user")
	switch {
	case user == "":
		http.Error(w, "give the user to make credentials for: ?user=", http.StatusBadRequest)
		return
	case len(user) > maxCredentialUser:
		http.Error(w, "user is too long for a TURN username", http.StatusBadRequest)
		return
	}
	creds, err := a.opts.Fleet.Credentials(r.Context(), user)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrUnavailable) {
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
