package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"

	"github.com/troupe-dev/troupe/sdk"
)

// The tool's bounds: whatever the tree, a call reads at most maxFiles
// files of at most maxFileSize each, answers with at most maxResults
// lines of at most maxLine bytes, and stops after maxTime.
const (
	maxFiles          = 5000
	maxFileSize       = 1 << 20
	defaultMaxResults = 100
	maxResults        = 1000
	maxLine           = 200
	maxTime           = 10 * time.Second
)

const todosParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory or file to search, relative to the repository root. Default: the whole repository."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most comments to list, 1 to 1000. Default 100."}
  },
  "additionalProperties": false
}`

// todosTool returns the todos tool: it lists the TODO, FIXME, HACK and
// XXX comments under the calling agent's directory, as path:line: text.
func todosTool() sdk.Tool {
	return &sdk.ToolFunc{
		ToolSpec: sdk.ToolSpec{
			Name:        "todos",
			Description: "List the TODO, FIXME, HACK and XXX comments under a path of the repository, one per line as path:line: text, with a count of each tag at the end. Use it to see what work the code itself says is left.",
			Parameters:  json.RawMessage(todosParams),
			ReadOnly:    true,
		},
		Func: runTodos,
	}
}

type todosArgs struct {
	Path       string `json:"path"`
	MaxResults *int   `json:"max_results"`
}

// tag matches a tag as a word, in upper case, as comments write them.
var tag = regexp.MustCompile(`\b(TODO|FIXME|HACK|XXX)\b`)

var tags = []string{"TODO", "FIXME", "HACK", "XXX"}

func runTodos(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var a todosArgs
	if err := decodeStrict(req.Args, &a); err != nil {
		return nil, sdk.Errorf(sdk.CodeInvalidArgument, "todos: %v; the arguments are {\"path\": \"dir\", \"max_results\": 100}, both optional", err)
	}
	limit := defaultMaxResults
	if a.MaxResults != nil {
		if *a.MaxResults < 1 || *a.MaxResults > maxResults {
			return nil, sdk.Errorf(sdk.CodeInvalidArgument, "todos: max_results is %d; give 1 to %d", *a.MaxResults, maxResults)
		}
		limit = *a.MaxResults
	}
	// A path is relative to the agent's directory and may not leave it.
	// os.Root enforces the same for symbolic links.
	p := a.Path
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return nil, sdk.Errorf(sdk.CodeInvalidArgument, "todos: path %q is absolute; give a path relative to the repository root", a.Path)
	}
	p = path.Clean(filepath.ToSlash(p))
	if !fs.ValidPath(p) {
		return nil, sdk.Errorf(sdk.CodeInvalidArgument, "todos: path %q leaves the repository; give a path inside it", a.Path)
	}
	if req.Agent.Dir == "" {
		return nil, errors.New("todos: the agent has no directory")
	}
	root, err := os.OpenRoot(req.Agent.Dir)
	if err != nil {
		return nil, fmt.Errorf("todos: %w", err)
	}
	defer root.Close()

	// The walk is a span: sdk/serve's tracer records it under the
	// troupe's span of this call, in troupe's trace, and sends it back
	// with the answer. It counts, and holds nothing of the repository.
	walkCtx, span := otel.Tracer("troupe-plugin-todos").Start(ctx, "todos walk")
	defer span.End()
	walkCtx, cancel := context.WithTimeout(walkCtx, maxTime)
	defer cancel()
	s := &scan{ctx: walkCtx, fsys: root.FS(), limit: limit, counts: map[string]int{}}
	err = fs.WalkDir(s.fsys, p, s.visit)
	span.SetAttributes(attribute.Int("todos.files", s.files), attribute.Int("todos.found", len(s.found)+s.more))
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err() // the caller gave up
	case err == nil, errors.Is(err, errStop):
	case errors.Is(err, context.DeadlineExceeded):
		// The tool's own time limit: answer with what was found so far.
		s.notes = append(s.notes, fmt.Sprintf("... stopped after %v; search a smaller path", maxTime))
	case errors.Is(err, fs.ErrNotExist):
		return nil, sdk.Errorf(sdk.CodeInvalidArgument, "todos: %s does not exist; give a path inside the repository", p)
	default:
		return nil, fmt.Errorf("todos: %w", err)
	}
	return &sdk.CallResponse{Text: s.render()}, nil
}

// errStop ends a walk early.
var errStop = errors.New("stop")

// scan is one walk of the tool.
type scan struct {
	ctx    context.Context
	fsys   fs.FS
	limit  int
	files  int
	found  []string
	more   int
	counts map[string]int
	notes  []string
}

func (s *scan) visit(p string, d fs.DirEntry, err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil {
		if p == "." || d == nil {
			return err // the path asked for
		}
		return nil // an unreadable entry below it: skip
	}
	if d.IsDir() {
		if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "vendor") {
			return fs.SkipDir
		}
		return nil
	}
	// Regular files only: no symbolic links, pipes or devices.
	if !d.Type().IsRegular() {
		return nil
	}
	if s.files >= maxFiles {
		s.notes = append(s.notes, fmt.Sprintf("... stopped after %d files; search a smaller path", maxFiles))
		return errStop
	}
	s.files++
	return s.file(p)
}

func (s *scan) file(p string) error {
	f, err := s.fsys.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() || info.Size() > maxFileSize {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize))
	if err != nil || bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 {
		return nil // unreadable or binary
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxFileSize)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := tag.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s.counts[m[1]]++
		if len(s.found) >= s.limit {
			s.more++
			continue
		}
		text := strings.TrimSpace(line)
		if len(text) > maxLine {
			text = strings.ToValidUTF8(text[:maxLine], "") + " [...]"
		}
		s.found = append(s.found, fmt.Sprintf("%s:%d: %s", p, n, text))
	}
	return nil
}

func (s *scan) render() string {
	if len(s.found) == 0 {
		return strings.Join(append([]string{"no TODO, FIXME, HACK or XXX comments"}, s.notes...), "\n")
	}
	lines := append([]string{}, s.found...)
	if s.more > 0 {
		lines = append(lines, fmt.Sprintf("... %d more not shown; narrow the path or raise max_results", s.more))
	}
	var summary []string
	for _, t := range tags {
		if n := s.counts[t]; n > 0 {
			summary = append(summary, fmt.Sprintf("%d %s", n, t))
		}
	}
	lines = append(lines, fmt.Sprintf("... %s in %d files searched", strings.Join(summary, ", "), s.files))
	return strings.Join(append(lines, s.notes...), "\n")
}

// decodeStrict decodes args into dst: no unknown fields, nothing after the
// object; empty arguments and null are {}.
func decodeStrict(args json.RawMessage, dst any) error {
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the arguments object")
	}
	return nil
}
