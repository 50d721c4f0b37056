package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-dev/troupe/sdk/fault"
)

// A failed model call is a *fault.Error, troupe's one error type, whose
// code says what went wrong, and which errors.Is matches against the
// code's sentinel:
//
//   - fault.ErrUnauthenticated: the provider refused the key (HTTP 401 or
//     403);
//   - fault.ErrRateLimited: the provider rate-limited the call (HTTP 429),
//     or the account is out of quota, and retries did not help;
//   - fault.ErrContextTooLong: the conversation is longer than the model's
//     context window (or the request is too large);
//   - fault.ErrUnavailable: the provider failed (HTTP 5xx, 529 overloaded,
//     408), and retries did not help;
//   - fault.ErrInvalidArgument: the provider rejected the request as
//     malformed, or does not know the model (HTTP 400, 404, 422 and other
//     4xx);
//   - fault.ErrUnreachable: no HTTP response at all: connection refused,
//     DNS, TLS. For a local server (Ollama, vLLM), it is probably not
//     running;
//   - fault.ErrResponseTooLarge: the provider's response passed the size
//     limit (Resolver.MaxResponseBytes, the config's max_response_bytes,
//     else DefaultMaxResponseBytes); reading stopped there.
//
// Its message names the provider, the class, the HTTP status, the
// attempts, why retrying stopped early, the provider's own words with keys
// redacted, and what to do; Retryable says whether trying again may help.

// failure is a failed call as the wrapper classifies it, retries it and
// reports it (see fault).
type failure struct {
	code fault.Code
	// provider is "openai", "anthropic", "ollama", "googleai" or "".
	provider string
	// status is the HTTP status, or 0 when there was no response.
	status int
	// providerCode is the provider's error type or code, such as
	// "rate_limit_exceeded" or "overloaded_error", when it sent one.
	providerCode string
	// message is what the provider said, with keys redacted.
	message string
	// attempts is how many times the call was made.
	attempts int
	// retryAfter is the wait the provider asked for, when it asked.
	retryAfter time.Duration
	// gaveUp says why retrying stopped early, when it did ("the wait
	// would pass the deadline").
	gaveUp string
}

// what says what went wrong, in the words of a model call.
var what = map[fault.Code]string{
	fault.Unauthenticated:  "authentication failed",
	fault.RateLimited:      "rate limited",
	fault.ContextTooLong:   "context too long",
	fault.Unavailable:      "provider server error",
	fault.InvalidArgument:  "bad request",
	fault.Unreachable:      "provider unreachable",
	fault.ResponseTooLarge: "response too large",
}

// err is the failure as the caller gets it.
func (f *failure) err() *fault.Error {
	return &fault.Error{Code: f.code, Message: f.text(), Retryable: f.retryable()}
}

func (f *failure) text() string {
	var b strings.Builder
	if f.provider != "" {
		b.WriteString(f.provider)
		b.WriteString(": ")
	}
	if w, ok := what[f.code]; ok {
		b.WriteString(w)
	} else {
		b.WriteString("call failed")
	}
	var detail []string
	if f.status > 0 {
		detail = append(detail, "HTTP "+strconv.Itoa(f.status))
	}
	if f.attempts > 1 {
		detail = append(detail, strconv.Itoa(f.attempts)+" attempts")
	}
	if f.gaveUp != "" {
		detail = append(detail, f.gaveUp)
	}
	if len(detail) > 0 {
		b.WriteString(" (" + strings.Join(detail, ", ") + ")")
	}
	if f.message != "" {
		b.WriteString(": ")
		b.WriteString(f.message)
	}
	if hint := f.hint(); hint != "" {
		b.WriteString(" — ")
		b.WriteString(hint)
	}
	return b.String()
}

func (f *failure) hint() string {
	switch f.code {
	case fault.Unauthenticated:
		if env := keyEnv[f.provider]; env != "" {
			return "check " + env + " (or api_key under providers." + f.provider + " in the config file)"
		}
	case fault.ResponseTooLarge:
		return "if answers this large are expected, raise max_response_bytes in the config file"
	case fault.Unreachable:
		switch f.provider {
		case "ollama":
			return "is Ollama running? (ollama serve; OLLAMA_HOST says where)"
		case "openai":
			return "is the server at the base URL running? (OPENAI_BASE_URL)"
		}
	}
	return ""
}

// retryable reports whether trying again may help.
func (f *failure) retryable() bool {
	switch f.code {
	case fault.Unavailable:
		return true
	case fault.RateLimited:
		return !isQuota(f.providerCode, f.message)
	}
	return false
}

func isQuota(code, msg string) bool {
	s := strings.ToLower(code + " " + msg)
	return strings.Contains(s, "insufficient_quota") || strings.Contains(s, "exceeded your current quota") ||
		strings.Contains(s, "billing") || strings.Contains(s, "credit balance")
}

// stoppedError is returned when the caller's context ended: it matches
// context.Canceled or context.DeadlineExceeded, and the context's cause.
type stoppedError struct {
	provider string
	err      error // ctx.Err()
	cause    error // context.Cause(ctx), when it differs
}

func (e *stoppedError) Error() string {
	msg := e.provider + ": call stopped: " + e.err.Error()
	if e.cause != nil {
		msg += " (" + e.cause.Error() + ")"
	}
	return msg
}

func (e *stoppedError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.err, e.cause}
	}
	return []error{e.err}
}

func stopped(ctx context.Context, provider string) error {
	e := &stoppedError{provider: provider, err: ctx.Err()}
	if c := context.Cause(ctx); c != nil && c != e.err {
		e.cause = c
	}
	return e
}

// exchange is what the recording transport saw of one HTTP attempt; the
// wrapper classifies a failure from it rather than from error strings.
type exchange struct {
	status     int
	body       []byte
	retryAfter time.Duration
	netErr     error
	// tooLarge is the limit the body passed, or 0; atomic because a
	// streaming client reads the body on a goroutine of its own.
	tooLarge atomic.Int64
}

// statusRe finds the status in langchaingo's "API returned unexpected
// status code: 429: message" errors, for models that were not built with
// the recording transport.
var statusRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`status code: (\d{3})(?::\s*(.*))?`) })

// classify turns a failed call into a failure, or returns nil when the
// failure is not one it recognises (a malformed response, say).
func classify(provider string, err error, ex *exchange, secrets []string) *failure {
	f := &failure{provider: provider}
	var big *responseTooLarge
	switch {
	case errors.As(err, &big):
		f.code = fault.ResponseTooLarge
		f.message = big.Error()
	case ex != nil && ex.tooLarge.Load() > 0:
		// The client read past the limit but did not pass the error on.
		f.code = fault.ResponseTooLarge
		f.message = (&responseTooLarge{limit: ex.tooLarge.Load()}).Error()
	case ex != nil && ex.status >= 400:
		f.status = ex.status
		f.providerCode, f.message = errorBody(ex.body)
		f.retryAfter = ex.retryAfter
	case ex != nil && ex.netErr != nil:
		f.code = fault.Unreachable
		f.message = ex.netErr.Error()
	default:
		if m := statusRe().FindStringSubmatch(err.Error()); m != nil {
			f.status, _ = strconv.Atoi(m[1])
			f.message = m[2]
		} else if isNetErr(err) {
			f.code = fault.Unreachable
			f.message = err.Error()
		} else if s := strings.ToLower(err.Error()); strings.Contains(s, "overloaded") {
			// An error event in the middle of a stream.
			f.code = fault.Unavailable
			f.message = err.Error()
		} else {
			return nil
		}
	}
	if f.code == "" {
		f.code = codeOf(f.status, f.providerCode, f.message)
	}
	if f.message == "" {
		f.message = err.Error()
	}
	f.message = redact(clipMessage(f.message), secrets)
	return f
}

func isNetErr(err error) bool {
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &ne) || errors.As(err, &oe) || errors.As(err, &de) ||
		strings.Contains(err.Error(), "network error: failed to reach API server")
}

func codeOf(status int, code, msg string) fault.Code {
	switch {
	case status == 401 || status == 403:
		return fault.Unauthenticated
	case status == 429:
		return fault.RateLimited
	case status == 413:
		return fault.ContextTooLong
	case status == 408 || status >= 500:
		return fault.Unavailable
	case isContextLength(code, msg):
		return fault.ContextTooLong
	default:
		return fault.InvalidArgument
	}
}

func isContextLength(code, msg string) bool {
	s := strings.ToLower(code + " " + msg)
	for _, p := range []string{"context_length_exceeded", "maximum context length", "context window", "prompt is too long",
		"too many tokens", "input is too long", "exceeds the context", "request_too_large", "context length"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// errorBody reads the provider's error type and message from an error
// response: OpenAI {"error":{"message","type","code"}}, Anthropic
// {"type":"error","error":{"type","message"}}, Gemini's list form, or
// plain text.
func errorBody(body []byte) (code, msg string) {
	type inner struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Status  string `json:"status"`
	}
	type outer struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	parse := func(o outer) (string, string, bool) {
		var in inner
		if len(o.Error) > 0 && json.Unmarshal(o.Error, &in) == nil && in.Message != "" {
			c := in.Type
			switch v := in.Code.(type) {
			case string:
				if v != "" {
					c = v
				}
			}
			if c == "" {
				c = in.Status
			}
			return c, in.Message, true
		}
		var s string
		if len(o.Error) > 0 && json.Unmarshal(o.Error, &s) == nil && s != "" {
			return "", s, true // Ollama: {"error":"model not found"}
		}
		if o.Message != "" {
			return "", o.Message, true
		}
		return "", "", false
	}
	var o outer
	if json.Unmarshal(body, &o) == nil {
		if c, m, ok := parse(o); ok {
			return c, m
		}
	}
	var list []outer
	if json.Unmarshal(body, &list) == nil && len(list) > 0 {
		if c, m, ok := parse(list[0]); ok {
			return c, m
		}
	}
	return "", strings.TrimSpace(string(body))
}

func clipMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// keyShapes match API keys by their look, for keys troupe was not given
// (a proxy that echoes another key, say).
var keyShapes = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{8,}|sk-(?:proj-)?[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}`)
})

// redact removes secrets and key-shaped strings from s.
func redact(s string, secrets []string) string {
	for _, k := range secrets {
		if len(k) >= 6 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return keyShapes().ReplaceAllString(s, "[redacted]")
}

// Redact removes the given secrets, and anything shaped like an OpenAI,
// Anthropic or Google API key, from s.
func Redact(s string, secrets ...string) string { return redact(s, secrets) }

// parseRetryAfter reads Retry-After (seconds or an HTTP date) and
// retry-after-ms, which OpenAI sends.
func parseRetryAfter(h func(string) string, now time.Time) time.Duration {
	if ms := strings.TrimSpace(h("Retry-After-Ms")); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := time.Parse(time.RFC1123, v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// wrapOther gives an unclassified failure its provider's name, keys
// redacted, keeping the chain for errors.Is.
func wrapOther(provider string, err error, secrets []string) error {
	msg := err.Error()
	if red := redact(msg, secrets); red != msg {
		return fmt.Errorf("%s: %s", provider, red)
	}
	return fmt.Errorf("%s: %w", provider, err)
}
