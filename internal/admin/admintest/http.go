package admintest

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Do sends one HTTP request to the admin page (with a bearer token unless
// token is empty) and returns the status, the headers and the whole body.
func Do(t testing.TB, method, url, token string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }() // the body is read below; a close error changes no assertion
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}
