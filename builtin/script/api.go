package script

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
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
	top   string // the workspace's top, when root is in one
	root  string
	fs    *fsroot.Root
	read  int64
	notes []string
	logs  []string
}

// reset starts a call whose root is root, below top when top is not
// "" (the agent's workspace).
func (s *callState) reset(top, root string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fs != nil && (s.fs.Dir() != root || s.top != top) {
		s.fs.Close()
		s.fs = nil
	}
	s.top, s.root, s.read, s.notes, s.logs = top, root, 0, nil, nil
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

// open opens the agent's root; s.mu is held.
func (s *callState) open() error {
	if s.fs != nil {
		return nil
	}
	if s.root == "" || !filepath.IsAbs(s.root) {
		return fmt.Errorf("this call has no root to read from")
	}
	var (
		r   *fsroot.Root
		err error
	)
	// In a workspace, the root may be a directory below its top that a
	// command replaced with a symlink: it is reached from the top.
	if rel, rerr := filepath.Rel(s.top, s.root); s.top != "" && rerr == nil && (rel == "." || filepath.IsLocal(rel)) {
		r, err = fsroot.OpenBeneath(s.top, rel)
	} else {
		r, err = fsroot.Open(s.root)
	}
	if err != nil {
		return err
	}
	s.fs = r
	return nil
}

// readFile reads a file under the agent's root through the same resolver
// as the builtin tools: nothing outside the root, no symlink that leaves
// it, regular files only.
func (s *callState) readFile(path string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return "", fmt.Errorf("ReadFile: %w", err)
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

// maxListed caps the paths one ListFiles returns.
const maxListed = 10_000

// listFiles returns the regular files under dir (relative to the agent's
// root, "." for all of it), slash-separated and relative to the root,
// skipping hidden entries and never following a symlink.
func (s *callState) listFiles(dir string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return nil, err
	}
	var out []string
	err := s.fs.WalkDir(context.Background(), dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil //nolint:nilerr // an unreadable entry is left out
		}
		if name != "." && name != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			if len(out) == maxListed {
				return fmt.Errorf("more than %d files under %s; list a smaller directory", maxListed, dir)
			}
			out = append(out, name)
		}
		return nil
	})
	return out, err
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
		"Task":      reflect.ValueOf((*Task)(nil)),
		"ToolCall":  reflect.ValueOf((*ToolCall)(nil)),
		"ReadFile":  reflect.ValueOf(s.readFile),
		"ListFiles": reflect.ValueOf(s.listFiles),
		"Note":      reflect.ValueOf(func(text string) { s.add(&s.notes, text) }),
		"Log": reflect.ValueOf(func(format string, args ...any) {
			s.add(&s.logs, fmt.Sprintf(format, args...))
		}),
	}
}
