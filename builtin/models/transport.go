package models

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/troupe-dev/troupe/sdk/fault"
)

type exchangeKey struct{}

// withExchange makes the recording transport report the attempt made with
// ctx into ex.
func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// recorder is the HTTP transport under every provider client the Resolver
// builds. It changes nothing on the wire; for an error response it keeps
// the status, the Retry-After headers and the body (and hands the client
// an identical body), so failures are classified from what was really
// said rather than from error strings. It also caps every response body at
// maxBody bytes, streamed or not, so a server that never stops sending
// cannot fill memory.
type recorder struct {
	base    http.RoundTripper
	maxBody int64
}

const maxErrorBody = 64 << 10

// DefaultMaxResponseBytes caps what is read of one provider response when
// neither Resolver.MaxResponseBytes nor the config's max_response_bytes
// says otherwise. It is far above any real answer, streamed ones included
// (a streamed token costs a few hundred bytes of framing).
const DefaultMaxResponseBytes = 64 << 20

func (t *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if ex != nil {
			ex.netErr = err
		}
		return resp, err
	}
	limit := t.maxBody
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	resp.Body = &limitedBody{rc: resp.Body, left: limit, limit: limit, ex: ex}
	if ex == nil {
		return resp, nil
	}
	ex.status = resp.StatusCode
	if resp.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		ex.body = body
		ex.retryAfter = parseRetryAfter(resp.Header.Get, time.Now())
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

// limitedBody reads at most limit bytes of a response body (and one more
// to tell a body of exactly limit bytes from a longer one), then fails
// every read with a *responseTooLarge.
type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
	over  bool
	ex    *exchange
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, &responseTooLarge{limit: b.limit}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.left == 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n == 0 {
			return 0, err
		}
		b.over = true
		if b.ex != nil {
			b.ex.tooLarge.Store(b.limit)
		}
		return 0, &responseTooLarge{limit: b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// responseTooLarge is the read error of a body past its limit; it matches
// fault.ErrResponseTooLarge.
type responseTooLarge struct{ limit int64 }

func (e *responseTooLarge) Error() string {
	return fmt.Sprintf("the response is larger than the limit of %s", sizeString(e.limit))
}

func (e *responseTooLarge) Unwrap() error { return fault.ErrResponseTooLarge }

// sizeString renders a byte count for messages: "64 MiB", "1.5 KiB", "12 bytes".
func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', -1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// anthropicWire merges consecutive messages of the same role in an
// Anthropic Messages request into one message, so that an assistant turn
// with several tool_use blocks, and the user turn with their tool_result
// blocks, go out as the API documents them. langchaingo's Anthropic client
// sends only the first part of each message, so the wrapper splits such
// turns into one message per part; this puts them back together.
type anthropicWire struct {
	base http.RoundTripper
}

func (t *anthropicWire) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || req.GetBody == nil {
		return t.base.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return t.base.RoundTrip(req)
	}
	raw, err := io.ReadAll(body)
	_ = body.Close()
	if err != nil {
		return t.base.RoundTrip(req)
	}
	merged, changed := mergeAnthropicTurns(raw)
	if !changed {
		return t.base.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(merged))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(merged)), nil }
	out.ContentLength = int64(len(merged))
	out.Header.Set("Content-Length", strconv.Itoa(len(merged)))
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return t.base.RoundTrip(out)
}

// mergeAnthropicTurns rewrites a Messages request body so no two
// consecutive messages share a role. It keeps the body as it is when
// nothing needs merging or the body is not a Messages request.
func mergeAnthropicTurns(raw []byte) ([]byte, bool) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(raw, &req); err != nil {
		return raw, false
	}
	msgsRaw, ok := req["messages"]
	if !ok {
		return raw, false
	}
	type message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	var msgs []message
	if err := json.Unmarshal(msgsRaw, &msgs); err != nil {
		return raw, false
	}
	needs := false
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == msgs[i-1].Role {
			needs = true
			break
		}
	}
	if !needs {
		return raw, false
	}
	blocks := func(c json.RawMessage) ([]json.RawMessage, bool) {
		var list []json.RawMessage
		if json.Unmarshal(c, &list) == nil {
			return list, true
		}
		var s string
		if json.Unmarshal(c, &s) == nil {
			b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
			return []json.RawMessage{b}, true
		}
		return nil, false
	}
	type merged struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	var out []merged
	for _, m := range msgs {
		bs, ok := blocks(m.Content)
		if !ok {
			return raw, false
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Content = append(out[n-1].Content, bs...)
			continue
		}
		out = append(out, merged{Role: m.Role, Content: bs})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return raw, false
	}
	req["messages"] = b
	body, err := json.Marshal(req)
	if err != nil {
		return raw, false
	}
	return body, true
}
