package script

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sync"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Task is what a Prompt hook is given: troupe.Task in a script.
type Task struct {
	// Prompt is the task text.
	Prompt string `json:"prompt"`
	// Type is the agent's type.
	Type string `json:"type"`
	// Root is the directory the agent works in.
	Root string `json:"root"`
}

// ToolCall is what a BeforeTool hook is given: troupe.ToolCall in a
// script.
type ToolCall struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Args are the arguments the model sent, decoded.
	Args map[string]any `json:"args"`
}

// Limits of the host API, per call of a hook or tool.
const (
	maxReadBytes  = 1 << 20  // one ReadFile
	maxReadTotal  = 64 << 20 // all ReadFiles of one call
	maxNotes      = 100
	maxNoteBytes  = 4 << 10
	maxReplyBytes = 1 << 20 // a hook's or tool's text
	maxSource     = 256 << 10
)

// callState is what the host API works on during one call: the agent's
// root, and the notes and log lines to hand back.
type callState struct {
	mu    sync.Mutex
	root  string
	fs    *fsroot.Root
	read  int64
	notes []string
	logs  []string
}

func (s *callState) reset(root string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fs != nil && s.fs.Dir() != root {
		s.fs.Close()
		s.fs = nil
	}
	s.root, s.read, s.notes, s.logs = root, 0, nil, nil
}

func (s *callState) take() (notes, logs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	notes, logs = s.notes, s.logs
	s.notes, s.logs = nil, nil
	return notes, logs
}

func (s *callState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fs != nil {
		s.fs.Close()
		s.fs = nil
	}
}

// readFile reads a file under the agent's root through the same resolver
// as the builtin tools: nothing outside the root, no symlink that leaves
// it, regular files only.
func (s *callState) readFile(path string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == "" {
		return "", fmt.Errorf("ReadFile: this call has no root to read from")
	}
	if s.fs == nil {
		if !filepath.IsAbs(s.root) {
			return "", fmt.Errorf("ReadFile: the agent's root %q is not absolute", s.root)
		}
		r, err := fsroot.Open(s.root)
		if err != nil {
			return "", fmt.Errorf("ReadFile: %w", err)
		}
		s.fs = r
	}
	if s.read >= maxReadTotal {
		return "", fmt.Errorf("ReadFile: this call has read %d MiB, the most one call may", maxReadTotal>>20)
	}
	data, truncated, err := s.fs.ReadFile(path, maxReadBytes)
	if err != nil {
		return "", err
	}
	s.read += int64(len(data))
	if truncated {
		return string(data), fmt.Errorf("ReadFile %s: the file is larger than %d KiB; this is its start", path, maxReadBytes>>10)
	}
	return string(data), nil
}

func (s *callState) add(list *[]string, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(*list) >= maxNotes {
		return
	}
	if len(text) > maxNoteBytes {
		text = text[:maxNoteBytes]
	}
	*list = append(*list, text)
}

// hostAPI is the troupe package a script imports, bound to one
// interpreter's call state.
func hostAPI(s *callState) map[string]reflect.Value {
	return map[string]reflect.Value{
		"Task":     reflect.ValueOf((*Task)(nil)),
		"ToolCall": reflect.ValueOf((*ToolCall)(nil)),
		"ReadFile": reflect.ValueOf(s.readFile),
		"Note":     reflect.ValueOf(func(text string) { s.add(&s.notes, text) }),
		"Log": reflect.ValueOf(func(format string, args ...any) {
			s.add(&s.logs, fmt.Sprintf(format, args...))
		}),
	}
}
