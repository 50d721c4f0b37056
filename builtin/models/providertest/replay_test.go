package providertest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/models/providertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const fixture = `# two exchanges
--- request first
POST /v1/messages
X-Api-Key: k

{"stream": "$absent", "messages": [{"role": "user", "content": "$prefix:Hi"}]}
--- response
HTTP/2.0 429 Too Many Requests
Retry-After: 3
Content-Length: 999

{"type":"error"}
--- request
GET /v1/models
--- response
HTTP/1.1 200 OK

line one
--- not a delimiter
line three
`

func TestParse(t *testing.T) {
	ex, err := providertest.Parse("f.txt", []byte(fixture))
	require.NoError(t, err)
	require.Len(t, ex, 2)
	assert.Equal(t, "f.txt:2", ex[0].Source)
	assert.Equal(t, "POST", ex[0].Request.Method)
	assert.Equal(t, "/v1/messages", ex[0].Request.Path)
	assert.Equal(t, "k", ex[0].Request.Header.Get("X-Api-Key"))
	assert.Equal(t, 429, ex[0].Response.Status)
	assert.Equal(t, "3", ex[0].Response.Header.Get("Retry-After"))
	assert.Empty(t, ex[0].Response.Header.Get("Content-Length"), "the server sets the length")
	assert.Equal(t, `{"type":"error"}`, string(ex[0].Response.Body), "no trailing newline: it belongs to the delimiter")
	assert.Nil(t, ex[1].Request.Body)
	assert.Equal(t, "line one\n--- not a delimiter\nline three", string(ex[1].Response.Body))
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, msg string }{
		{"nothing here\n", `no "--- request" line`},
		{"--- response\nHTTP/1.1 200 OK\n", `expected "--- request"`},
		{"--- request\nPOST /x\n", `no "--- response"`},
		{"--- request\nPOST\n--- response\nHTTP/1.1 200 OK\n", `"METHOD /path"`},
		{"--- request\nPOST /x\n\n{bad\n--- response\nHTTP/1.1 200 OK\n", "request body pattern"},
		{"--- request\nPOST /x\n--- response\n200 OK\n", "status line"},
		{"--- request\nPOST /x\nno colon here\n--- response\nHTTP/1.1 200 OK\n", "has no colon"},
	} {
		_, err := providertest.Parse("f.txt", []byte(tc.text))
		require.Error(t, err, tc.text)
		assert.Contains(t, err.Error(), tc.msg)
	}
}

func TestServerReplaysAndChecks(t *testing.T) {
	ex, err := providertest.Parse("f.txt", []byte(fixture))
	require.NoError(t, err)
	srv := providertest.Start(ex...)

	post := func(key, body string) (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	code, body, h := post("k", `{"messages":[{"role":"user","content":"Hi there"}]}`)
	assert.Equal(t, 429, code)
	assert.Equal(t, `{"type":"error"}`, body)
	assert.Equal(t, "3", h.Get("Retry-After"))

	// The second exchange wants GET /v1/models; a wrong request is refused
	// and reported.
	code, body, _ = post("wrong", `{"stream":true}`)
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "replay_mismatch")
	err = srv.Close()
	require.Error(t, err)
	for _, want := range []string{"request 2 does not match f.txt:13", "got POST /v1/messages, want GET /v1/models"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Len(t, srv.Requests(), 2)
}

func TestServerReportsWhatWasNotRequested(t *testing.T) {
	ex, err := providertest.Parse("f.txt", []byte(fixture))
	require.NoError(t, err)
	srv := providertest.Start(ex...)
	err = srv.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 recorded exchange(s) never requested, from f.txt:2")
}

func TestBodyMismatch(t *testing.T) {
	ex, err := providertest.Parse("f.txt", []byte(fixture))
	require.NoError(t, err)
	srv := providertest.Start(ex[0])
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"Hello"}]}`))
	req.Header.Set("X-Api-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	err = srv.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `$.messages[0].content: want a string starting with "Hi"`)

	srv = providertest.Start(ex[0])
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"Hi"}]}`))
	req.Header.Set("X-Api-Key", "k")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	err = srv.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `$.stream: want no such key, got true`)
}

func TestMatch(t *testing.T) {
	ok := []struct{ p, a any }{
		{"$any", nil},
		{"$contains:cart", "in cart/cart.go"},
		{1.0, 1.0},
		{map[string]any{}, map[string]any{"x": 1.0}},
		{[]any{"a", map[string]any{"b": true}}, []any{"a", map[string]any{"b": true, "c": 1.0}}},
	}
	for _, c := range ok {
		assert.NoError(t, providertest.Match(c.p, c.a), "%v %v", c.p, c.a)
	}
	bad := []struct {
		p, a any
		msg  string
	}{
		{"x", "y", `$: want "x", got "y"`},
		{1.0, "1", `$: want 1, got "1"`},
		{map[string]any{"a": 1.0}, []any{}, "want an object"},
		{[]any{}, map[string]any{}, "want an array"},
		{map[string]any{"a": map[string]any{"b": "$prefix:x"}}, map[string]any{"a": map[string]any{"b": "yx"}}, `$.a.b: want a string starting with "x"`},
	}
	for _, c := range bad {
		err := providertest.Match(c.p, c.a)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.msg)
	}
}
