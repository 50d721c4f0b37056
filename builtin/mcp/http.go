package mcp

import (
	"net/http"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
)

// httpTransport reaches s over streamable HTTP with its headers, their
// ${VAR}s expanded. It does not reconnect on its own: a broken session
// is the pool's to restart, once.
// release closes its idle connections once the session ended.
func httpTransport(s agenttypes.MCPServer, environ []string) (t mcpsdk.Transport, release func(), err error) {
	headers, err := expand(s, "header", s.Headers, environ)
	if err != nil {
		return nil, nil, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &mcpsdk.StreamableClientTransport{
		Endpoint:             s.URL,
		HTTPClient:           &http.Client{Transport: &withHeaders{base: base, headers: headers}},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, base.CloseIdleConnections, nil
}

// withHeaders adds an entry's headers to every request.
type withHeaders struct {
	base    *http.Transport
	headers map[string]string
}

func (w *withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.headers {
		r.Header.Set(k, v)
	}
	return w.base.RoundTrip(r)
}
