package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/httpapi"
)

// adminClient talks to a running turnd's admin endpoints.
type adminClient struct {
	addr  string
	token string
	http  *http.Client
}

// newAdminClient resolves turnd's HTTP address and reads the admin token:
// --token-file, else the config's http.admin_token_file.
func newAdminClient(httpAddr, cfgPath, tokenFile string) (*adminClient, error) {
	addr, err := httpTarget(httpAddr, cfgPath)
	if err != nil {
		return nil, err
	}
	if tokenFile == "" && cfgPath != "" {
		cfg, err := config.Load(cfgPath)
		if err != nil {
			return nil, err
		}
		tokenFile = cfg.HTTP.AdminTokenFile
	}
	if tokenFile == "" {
		return nil, errNoTokenFile
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	token := string(bytes.TrimSpace(b))
	if token == "" {
		return nil, fmt.Errorf("read admin token %s: %w", tokenFile, httpapi.ErrEmptyToken)
	}
	return &adminClient{addr: addr, token: token, http: &http.Client{Timeout: requestTimeout}}, nil
}

// do sends an admin request and returns the body of a 200 answer.
func (c *adminClient) do(method, pathAndQuery string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.addr+pathAndQuery, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(httpapi.OperatorHeader, operator())
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, pathAndQuery, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pathAndQuery, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusUnauthorized:
		return nil, errTokenWrong
	case http.StatusNotFound:
		return nil, errAdminOff
	}
	return nil, fmt.Errorf("%s %s: %s: %s", method, pathAndQuery, resp.Status, bytes.TrimSpace(body))
}

// operator names who runs the command, for turnd's log line.
func operator() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
