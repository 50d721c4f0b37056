package providertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Exchange is one recorded request and the response to it.
type Exchange struct {
	// Request is what the client must send.
	Request Request
	// Response is what the server sends back, byte for byte.
	Response Response
	// Source is "file:line" of the exchange, for messages.
	Source string
}

// Request is what a recorded request must look like.
type Request struct {
	Method string
	// Path is the URL path, without the query.
	Path string
	// Header lists headers that must have exactly these values (the key
	// headers: Authorization, x-api-key, anthropic-version).
	Header http.Header
	// Body is a JSON pattern the request body must match (see Match); nil
	// checks nothing.
	Body any
}

// Response is a recorded response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ParseFile reads a fixture file (see the package documentation for the
// format).
func ParseFile(path string) ([]Exchange, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse reads fixture text; name is used in messages.
func Parse(name string, data []byte) ([]Exchange, error) {
	secs := sections(data)
	if len(secs) == 0 {
		return nil, fmt.Errorf("%s: no \"--- request\" line", name)
	}
	var out []Exchange
	for i := 0; i < len(secs); i += 2 {
		req := secs[i]
		where := fmt.Sprintf("%s:%d", name, req.line)
		if req.kind != "request" {
			return nil, fmt.Errorf("%s: expected \"--- request\", found \"--- %s\"", where, req.kind)
		}
		if i+1 >= len(secs) || secs[i+1].kind != "response" {
			return nil, fmt.Errorf("%s: the request has no \"--- response\" after it", where)
		}
		ex := Exchange{Source: where}
		var err error
		if ex.Request, err = parseRequest(where, data[req.start:req.end]); err != nil {
			return nil, err
		}
		resp := secs[i+1]
		rwhere := fmt.Sprintf("%s:%d", name, resp.line)
		if ex.Response, err = parseResponse(rwhere, data[resp.start:resp.end]); err != nil {
			return nil, err
		}
		out = append(out, ex)
	}
	return out, nil
}

// section is the text under one "--- request" or "--- response" line.
type section struct {
	kind  string // "request" or "response"
	line  int    // line of the delimiter
	start int    // byte offset after the delimiter line
	end   int    // byte offset of the newline before the next delimiter
}

// sections finds the delimiter lines of data, in order; the last section
// runs to the end of data, less one final newline.
func sections(data []byte) []section {
	var secs []section
	line, off := 1, 0
	for off <= len(data) {
		nl := bytes.IndexByte(data[off:], '\n')
		end := len(data)
		if nl >= 0 {
			end = off + nl
		}
		text := string(data[off:end])
		for _, kind := range []string{"request", "response"} {
			if text == "--- "+kind || strings.HasPrefix(text, "--- "+kind+" ") {
				if n := len(secs); n > 0 {
					secs[n-1].end = max(off-1, secs[n-1].start)
				}
				next := end + 1
				if next > len(data) {
					next = len(data)
				}
				secs = append(secs, section{kind: kind, line: line, start: next})
			}
		}
		if nl < 0 {
			break
		}
		off = end + 1
		line++
	}
	if len(secs) == 0 {
		return nil
	}
	last := &secs[len(secs)-1]
	last.end = len(data)
	if last.end > last.start && data[last.end-1] == '\n' {
		last.end--
	}
	return secs
}

// parseRequest reads a request section: "METHOD /path", the headers that
// must match, and the JSON pattern of the body, if any. where is the
// section's file:line, for messages.
func parseRequest(where string, text []byte) (Request, error) {
	start, header, body, err := splitMessage(text)
	if err != nil {
		return Request{}, fmt.Errorf("%s: %w", where, err)
	}
	method, path, ok := strings.Cut(start, " ")
	if !ok || method == "" || !strings.HasPrefix(path, "/") {
		return Request{}, fmt.Errorf("%s: the request line must be \"METHOD /path\", not %q", where, start)
	}
	req := Request{Method: method, Path: strings.TrimSpace(path), Header: header}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req.Body); err != nil {
			return Request{}, fmt.Errorf("%s: request body pattern: %w", where, err)
		}
	}
	return req, nil
}

// parseResponse reads a response section: the status line, the headers
// and the body. The framing headers are dropped, as the server replaying
// it writes its own.
func parseResponse(where string, text []byte) (Response, error) {
	start, header, body, err := splitMessage(text)
	if err != nil {
		return Response{}, fmt.Errorf("%s: %w", where, err)
	}
	fields := strings.Fields(start)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/") {
		return Response{}, fmt.Errorf("%s: the status line must be \"HTTP/1.1 200 OK\", not %q", where, start)
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil || status < 100 || status > 999 {
		return Response{}, fmt.Errorf("%s: bad status %q", where, fields[1])
	}
	header.Del("Content-Length")
	header.Del("Transfer-Encoding")
	return Response{Status: status, Header: header, Body: body}, nil
}

// splitMessage splits a section into its first line, its headers (up to a
// blank line) and the body after that blank line, kept byte for byte.
func splitMessage(b []byte) (start string, h http.Header, body []byte, err error) {
	h = http.Header{}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return strings.TrimSpace(string(b)), h, nil, nil
	}
	start = strings.TrimSpace(string(b[:nl]))
	rest := b[nl+1:]
	for {
		nl := bytes.IndexByte(rest, '\n')
		lineBytes := rest
		if nl >= 0 {
			lineBytes = rest[:nl]
		}
		line := strings.TrimRight(string(lineBytes), "\r")
		if line == "" {
			if nl < 0 {
				return start, h, nil, nil
			}
			return start, h, rest[nl+1:], nil
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return "", nil, nil, fmt.Errorf("header line %q has no colon (a blank line must separate the headers from the body)", line)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		if nl < 0 {
			return start, h, nil, nil
		}
		rest = rest[nl+1:]
	}
}

// Received is a request the server got.
type Received struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the body.
func (r Received) JSON() (map[string]any, error) {
	var v map[string]any
	err := json.Unmarshal(r.Body, &v)
	return v, err
}

// Server replays exchanges in order on 127.0.0.1. A request that does not
// match the next exchange gets HTTP 400 with the reasons, and the
// mismatch is reported by Close (and by the test, with NewServer).
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	srv       *httptest.Server
	mu        sync.Mutex
	exchanges []Exchange
	next      int
	received  []Received
	problems  []string
	closeOnce sync.Once
	closeErr  error
}

// Start starts a server replaying exchanges. Close it.
func Start(exchanges ...Exchange) *Server {
	s := &Server{exchanges: exchanges}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// T is the part of testing.TB the server uses.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Cleanup(func())
}

// NewServer starts a server replaying exchanges and closes it when the
// test ends, failing the test for requests that did not match and for
// exchanges never requested.
func NewServer(t T, exchanges ...Exchange) *Server {
	t.Helper()
	s := Start(exchanges...)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return s
}

// Replay starts a server replaying the fixture file at path, as NewServer.
func Replay(t interface {
	T
	Fatalf(string, ...any)
}, path string) *Server {
	t.Helper()
	ex, err := ParseFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return NewServer(t, ex...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.received = append(s.received, Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n := len(s.received)
	if s.next >= len(s.exchanges) {
		msg := fmt.Sprintf("request %d (%s %s) came after all %d recorded exchanges", n, r.Method, r.URL.Path, len(s.exchanges))
		s.problems = append(s.problems, msg)
		s.mu.Unlock()
		replayError(w, msg)
		return
	}
	ex := s.exchanges[s.next]
	s.next++
	if errs := check(ex.Request, r, body); len(errs) > 0 {
		msg := fmt.Sprintf("request %d does not match %s:\n  %s", n, ex.Source, strings.Join(errs, "\n  "))
		s.problems = append(s.problems, msg)
		s.mu.Unlock()
		replayError(w, msg)
		return
	}
	s.mu.Unlock()
	h := w.Header()
	for k, vs := range ex.Response.Header {
		h[k] = append([]string(nil), vs...)
	}
	w.WriteHeader(ex.Response.Status)
	_, _ = w.Write(ex.Response.Body)
}

func replayError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"type": "replay_mismatch", "message": "replay: " + msg}})
	_, _ = w.Write(b)
}

func check(want Request, r *http.Request, body []byte) []string {
	var errs []string
	if r.Method != want.Method || r.URL.Path != want.Path {
		errs = append(errs, fmt.Sprintf("got %s %s, want %s %s", r.Method, r.URL.Path, want.Method, want.Path))
	}
	keys := make([]string, 0, len(want.Header))
	for k := range want.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got, w := r.Header.Get(k), want.Header.Get(k); got != w {
			errs = append(errs, fmt.Sprintf("header %s: got %q, want %q", k, got, w))
		}
	}
	if want.Body != nil {
		var got any
		if err := json.Unmarshal(body, &got); err != nil {
			errs = append(errs, fmt.Sprintf("body is not JSON: %v", err))
		} else if err := Match(want.Body, got); err != nil {
			errs = append(errs, "body: "+err.Error())
		}
	}
	return errs
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Close stops the server and reports requests that did not match and
// exchanges that were never requested.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.srv.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		problems := s.problems
		if left := len(s.exchanges) - s.next; left > 0 {
			problems = append(problems, fmt.Sprintf("%d recorded exchange(s) never requested, from %s", left, s.exchanges[s.next].Source))
		}
		if len(problems) > 0 {
			s.closeErr = errors.New("replay: " + strings.Join(problems, "\nreplay: "))
		}
	})
	return s.closeErr
}

// Match reports how actual, a decoded JSON value, differs from pattern:
// an object matches when each of the pattern's keys matches (other keys
// are ignored); an array when it has as many elements, each matching; a
// string pattern "$any" matches any value, "$absent" (as an object
// member) a missing key, "$contains:TEXT" and "$prefix:TEXT" strings
// containing or starting with TEXT; anything else must be equal.
func Match(pattern, actual any) error {
	return match("$", pattern, actual)
}

func match(path string, pattern, actual any) error {
	switch p := pattern.(type) {
	case map[string]any:
		a, ok := actual.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %s", path, show(actual))
		}
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, present := a[k]
			if p[k] == "$absent" {
				if present {
					return fmt.Errorf("%s.%s: want no such key, got %s", path, k, show(v))
				}
				continue
			}
			if !present {
				return fmt.Errorf("%s.%s: missing", path, k)
			}
			if err := match(path+"."+k, p[k], v); err != nil {
				return err
			}
		}
		return nil
	case []any:
		a, ok := actual.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %s", path, show(actual))
		}
		if len(a) != len(p) {
			return fmt.Errorf("%s: want %d elements, got %d: %s", path, len(p), len(a), show(actual))
		}
		for i := range p {
			if err := match(fmt.Sprintf("%s[%d]", path, i), p[i], a[i]); err != nil {
				return err
			}
		}
		return nil
	case string:
		switch {
		case p == "$any":
			return nil
		case strings.HasPrefix(p, "$contains:"):
			s, ok := actual.(string)
			if !ok || !strings.Contains(s, p[len("$contains:"):]) {
				return fmt.Errorf("%s: want a string containing %q, got %s", path, p[len("$contains:"):], show(actual))
			}
			return nil
		case strings.HasPrefix(p, "$prefix:"):
			s, ok := actual.(string)
			if !ok || !strings.HasPrefix(s, p[len("$prefix:"):]) {
				return fmt.Errorf("%s: want a string starting with %q, got %s", path, p[len("$prefix:"):], show(actual))
			}
			return nil
		}
	}
	if !equal(pattern, actual) {
		return fmt.Errorf("%s: want %s, got %s", path, show(pattern), show(actual))
	}
	return nil
}

func equal(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
