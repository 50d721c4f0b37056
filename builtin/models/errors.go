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
	"sync/atomic"
	"time"
)

// Sentinel errors a failed model call matches with errors.Is. Every error
// the wrapped models return for a provider's refusal is an *Error whose
// Kind is one of these.
var (
	// ErrAuth: the provider refused the key (HTTP 401 or 403).
	ErrAuth = errors.New("authentication failed")
	// ErrRateLimit: the provider rate-limited the call (HTTP 429), or the
	// account is out of quota, and retries did not help.
	ErrRateLimit = errors.New("rate limited")
	// ErrContextLength: the conversation is longer than the model's
	// context window (or the request is too large).
	ErrContextLength = errors.New("context too long")
	// ErrServer: the provider failed (HTTP 5xx, 529 overloaded, 408), and
	// retries did not help.
	ErrServer = errors.New("provider server error")
	// ErrBadRequest: the provider rejected the request as malformed, or
	// does not know the model (HTTP 400, 404, 422 and other 4xx).
	ErrBadRequest = errors.New("bad request")
	// ErrUnreachable: no HTTP response at all: connection refused, DNS,
	// TLS. For a local server (Ollama, vLLM), it is probably not running.
	ErrUnreachable = errors.New("provider unreachable")
	// ErrResponseTooLarge: the provider's response passed the size limit
	// (Resolver.MaxResponseBytes, the config's max_response_bytes, else
	// DefaultMaxResponseBytes); reading stopped there.
	ErrResponseTooLarge = errors.New("response too large")
)

// Error is a classified model-call failure. It matches its Kind with
// errors.Is; Message is the provider's own words with keys redacted.
type Error struct {
	// Kind is ErrAuth, ErrRateLimit, ErrContextLength, ErrServer,
	// ErrBadRequest, ErrUnreachable or ErrResponseTooLarge.
	Kind error
	// Provider is "openai", "anthropic", "ollama", "googleai" or "".
	Provider string
	// Status is the HTTP status, or 0 when there was no response.
	Status int
	// Code is the provider's error type or code, such as
	// "rate_limit_exceeded" or "overloaded_error", when it sent one.
	Code string
	// Message is what the provider said, with keys redacted.
	Message string
	// Attempts is how many times the call was made.
	Attempts int
	// RetryAfter is the wait the provider asked for, when it asked.
	RetryAfter time.Duration
	// GaveUp says why retrying stopped early, when it did ("the wait
	// would pass the deadline").
	GaveUp string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	} else {
		b.WriteString("call failed")
	}
	var detail []string
	if e.Status > 0 {
		detail = append(detail, "HTTP "+strconv.Itoa(e.Status))
	}
	if e.Attempts > 1 {
		detail = append(detail, strconv.Itoa(e.Attempts)+" attempts")
	}
	if e.GaveUp != "" {
		detail = append(detail, e.GaveUp)
	}
	if len(detail) > 0 {
		b.WriteString(" (" + strings.Join(detail, ", ") + ")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if hint := e.hint(); hint != "" {
		b.WriteString(" — ")
		b.WriteString(hint)
	}
	return b.String()
}

// Unwrap returns Kind, so errors.Is(err, ErrRateLimit) works.
func (e *Error) Unwrap() error { return e.Kind }

func (e *Error) hint() string {
	switch e.Kind {
	case ErrAuth:
		if env := keyEnv[e.Provider]; env != "" {
			return "check " + env + " (or api_key under providers." + e.Provider + " in the config file)"
		}
	case ErrResponseTooLarge:
		return "if answers this large are expected, raise max_response_bytes in the config file (Resolver.MaxResponseBytes in Go)"
	case ErrUnreachable:
		switch e.Provider {
		case "ollama":
			return "is Ollama running? (ollama serve; OLLAMA_HOST says where)"
		case "openai":
			return "is the server at the base URL running? (OPENAI_BASE_URL)"
		}
	}
	return ""
}

// retryable reports whether trying again may help.
func (e *Error) retryable() bool {
	switch e.Kind {
	case ErrServer:
		return true
	case ErrRateLimit:
		return !isQuota(e.Code, e.Message)
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
var statusRe = regexp.MustCompile(`status code: (\d{3})(?::\s*(.*))?`)

// classify turns a failed call into an *Error, or returns nil when the
// failure is not one it recognises (a malformed response, say).
func classify(provider string, err error, ex *exchange, secrets []string) *Error {
	e := &Error{Provider: provider}
	var big *responseTooLarge
	switch {
	case errors.As(err, &big):
		e.Kind = ErrResponseTooLarge
		e.Message = big.Error()
	case ex != nil && ex.tooLarge.Load() > 0:
		// The client read past the limit but did not pass the error on.
		e.Kind = ErrResponseTooLarge
		e.Message = (&responseTooLarge{limit: ex.tooLarge.Load()}).Error()
	case ex != nil && ex.status >= 400:
		e.Status = ex.status
		e.Code, e.Message = errorBody(ex.body)
		e.RetryAfter = ex.retryAfter
	case ex != nil && ex.netErr != nil:
		e.Kind = ErrUnreachable
		e.Message = ex.netErr.Error()
	default:
		if m := statusRe.FindStringSubmatch(err.Error()); m != nil {
			e.Status, _ = strconv.Atoi(m[1])
			e.Message = m[2]
		} else if isNetErr(err) {
			e.Kind = ErrUnreachable
			e.Message = err.Error()
		} else if s := strings.ToLower(err.Error()); strings.Contains(s, "overloaded") {
			// An error event in the middle of a stream.
			e.Kind = ErrServer
			e.Message = err.Error()
		} else {
			return nil
		}
	}
	if e.Kind == nil {
		e.Kind = kindOf(e.Status, e.Code, e.Message)
	}
	if e.Message == "" {
		e.Message = err.Error()
	}
	e.Message = redact(clipMessage(e.Message), secrets)
	return e
}

func isNetErr(err error) bool {
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &ne) || errors.As(err, &oe) || errors.As(err, &de) ||
		strings.Contains(err.Error(), "network error: failed to reach API server")
}

func kindOf(status int, code, msg string) error {
	switch {
	case status == 401 || status == 403:
		return ErrAuth
	case status == 429:
		return ErrRateLimit
	case status == 413:
		return ErrContextLength
	case status == 408 || status >= 500:
		return ErrServer
	case isContextLength(code, msg):
		return ErrContextLength
	default:
		return ErrBadRequest
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
var keyShapes = regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{8,}|sk-(?:proj-)?[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}`)

// redact removes secrets and key-shaped strings from s.
func redact(s string, secrets []string) string {
	for _, k := range secrets {
		if len(k) >= 6 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return keyShapes.ReplaceAllString(s, "[redacted]")
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
