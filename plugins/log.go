package plugins

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// maxLogValue bounds each logged value a plugin sends.
const maxLogValue = 4 << 10

// slogger is an hclog.Logger that re-emits what go-plugin logs, the
// plugin's own JSON log lines among them, through slog with the plugin's
// name. onExit is told the text of go-plugin's "plugin process exited"
// line: the exit status.
type slogger struct {
	l      *slog.Logger
	name   string
	args   []any
	onExit func(status string)
}

var _ hclog.Logger = (*slogger)(nil)

func clip(s string) string {
	if len(s) > maxLogValue {
		return s[:maxLogValue] + "…"
	}
	return s
}

func (s *slogger) Log(level hclog.Level, msg string, args ...any) {
	if msg == "plugin process exited" && s.onExit != nil {
		status := "exit status 0"
		for i := 0; i+1 < len(args); i += 2 {
			if k, _ := args[i].(string); k == "error" {
				status = fmt.Sprint(args[i+1])
			}
		}
		s.onExit(status)
	}
	lvl := slog.LevelInfo
	switch {
	case level <= hclog.Debug:
		lvl = slog.LevelDebug
	case level == hclog.Warn:
		lvl = slog.LevelWarn
	case level >= hclog.Error:
		lvl = slog.LevelError
	}
	if !s.l.Enabled(context.Background(), lvl) {
		return
	}
	attrs := make([]any, 0, len(s.args)+len(args)+2)
	attrs = append(attrs, "plugin", s.name)
	attrs = append(attrs, s.args...)
	for i := 0; i+1 < len(args); i += 2 {
		k := fmt.Sprint(args[i])
		if k == "timestamp" || k == "@module" || k == "plugin" {
			continue
		}
		attrs = append(attrs, k, clip(fmt.Sprint(args[i+1])))
	}
	s.l.Log(context.Background(), lvl, clip(msg), attrs...)
}

func (s *slogger) Trace(msg string, args ...any) { s.Log(hclog.Trace, msg, args...) }
func (s *slogger) Debug(msg string, args ...any) { s.Log(hclog.Debug, msg, args...) }
func (s *slogger) Info(msg string, args ...any)  { s.Log(hclog.Info, msg, args...) }
func (s *slogger) Warn(msg string, args ...any)  { s.Log(hclog.Warn, msg, args...) }
func (s *slogger) Error(msg string, args ...any) { s.Log(hclog.Error, msg, args...) }
func (s *slogger) IsTrace() bool                 { return false }
func (s *slogger) IsDebug() bool                 { return s.l.Enabled(context.Background(), slog.LevelDebug) }
func (s *slogger) IsInfo() bool                  { return s.l.Enabled(context.Background(), slog.LevelInfo) }
func (s *slogger) IsWarn() bool                  { return s.l.Enabled(context.Background(), slog.LevelWarn) }
func (s *slogger) IsError() bool                 { return true }
func (s *slogger) ImpliedArgs() []any            { return s.args }
func (s *slogger) Name() string                  { return s.name }
func (s *slogger) SetLevel(hclog.Level)          {}
func (s *slogger) GetLevel() hclog.Level {
	if s.IsDebug() {
		return hclog.Debug
	}
	return hclog.Info
}

func (s *slogger) With(args ...any) hclog.Logger {
	c := *s
	c.args = append(append([]any{}, s.args...), args...)
	return &c
}

// Named keeps the plugin's name: go-plugin names the logger of a
// plugin's stderr after the binary.
func (s *slogger) Named(string) hclog.Logger      { return s }
func (s *slogger) ResetNamed(string) hclog.Logger { return s }

func (s *slogger) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return log.New(s.StandardWriter(nil), "", 0)
}

func (s *slogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return logWriter{s} }

type logWriter struct{ s *slogger }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.Info(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
