package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

const editDescription = `Replace an exact piece of text in a file of your workspace (your own copy of the project; nothing outside it changes).

old_string must be the file's text exactly, indentation and whitespace included (copy it from read's output without the line-number prefix), and must occur once: include enough surrounding lines to make it unique, or set replace_all to true to replace every occurrence. new_string replaces it ("" deletes it). When old_string is not found, the error shows the file's closest lines to copy from. Files must be UTF-8 text of at most 4 MiB; to create a file or replace all of it, use write.`

const editParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to change, relative to the workspace's top."},
    "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
    "new_string": {"type": "string", "description": "The text to put in its place; must differ from old_string."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string. Default false: old_string must occur exactly once."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`

// Edit returns the edit tool: an exact-string replace in a file of the
// calling agent's workspace. See the package documentation.
func Edit() agenttypes.Tool {
	return newWorkspaceTool("edit", editDescription, editParams, runEdit)
}

type editArgs struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

// edit is one replacement to make, its strings checked.
type edit struct {
	old, new string
	all      bool
}

func decodeEdit(raw json.RawMessage) (string, edit, error) {
	var a editArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", edit{}, err
	}
	switch {
	case a.Path == "":
		return "", edit{}, errors.New(`missing "path": give the file to change, relative to the workspace's top`)
	case a.OldString == nil:
		return "", edit{}, errors.New(`missing "old_string": give the exact text to replace`)
	case *a.OldString == "":
		return "", edit{}, errors.New(`old_string is empty; give the exact text to replace, or use write to create a file or replace all of it`)
	case a.NewString == nil:
		return "", edit{}, errors.New(`missing "new_string": give the text to put in place of old_string ("" to delete it)`)
	case *a.OldString == *a.NewString:
		return "", edit{}, errors.New("old_string and new_string are the same, so nothing would change; give the new text in new_string")
	}
	return a.Path, edit{old: *a.OldString, new: *a.NewString, all: a.ReplaceAll}, nil
}

func runEdit(ctx context.Context, env *agenttypes.Env, raw json.RawMessage) (string, error) {
	p, e, err := decodeEdit(raw)
	if err != nil {
		return "", err
	}
	root, err := workspaceRoot(env.Workspace)
	if err != nil {
		return "", err
	}
	defer root.Close()
	rel, err := root.Resolve(p)
	if err != nil {
		return "", err
	}
	// Under the lock, the file read is the file replaced: an edit made
	// at the same time waits for this one.
	defer lockFile(filepath.Join(root.Dir(), filepath.FromSlash(rel)))()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	t, err := resolveTarget(root, p)
	if err != nil {
		return "", err
	}
	text, err := readText(root, t)
	if err != nil {
		return "", err
	}
	updated, at, err := e.apply(t.rel, text)
	if err != nil {
		return "", err
	}
	if err := put(root, t, []byte(updated)); err != nil {
		return "", err
	}
	return describeEdit(t.rel, updated, at, e.new), nil
}

// readText reads the file edit changes, which must exist and be UTF-8
// text.
func readText(root *fsroot.Root, t *target) (string, error) {
	if t.info == nil {
		return "", fmt.Errorf("%s: %w; check the path with ls or glob, or use write to create the file", t.rel, fs.ErrNotExist)
	}
	data, truncated, err := root.ReadFile(t.rel, maxFileSize)
	if err != nil {
		return "", err
	}
	if truncated {
		return "", fmt.Errorf("%s is %s; edit changes files of at most 4 MiB", t.rel, size(int(t.info.Size())))
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file (%s); edit changes text files only, and write replaces a file whole", t.rel, size(len(data)))
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("%s is not UTF-8 text (a binary file, or text in another encoding); edit changes UTF-8 text only, and write replaces a file whole", t.rel)
	}
	return string(data), nil
}

// apply makes the replacement in text and returns the new text with the
// byte offsets in it where each replacement starts. In a file with CRLF
// line endings, an old_string written with LF endings matches too, and
// new_string gets the file's endings.
func (e edit) apply(rel, text string) (string, []int, error) {
	n := strings.Count(text, e.old)
	if n == 0 && strings.Contains(text, "\r\n") && strings.Contains(e.old, "\n") && !strings.Contains(e.old, "\r\n") {
		crlf := edit{old: toCRLF(e.old), new: toCRLF(e.new), all: e.all}
		if m := strings.Count(text, crlf.old); m > 0 {
			e, n = crlf, m
		}
	}
	switch {
	case n == 0:
		return "", nil, notFound(rel, text, e.old)
	case n > 1 && !e.all:
		return "", nil, fmt.Errorf("old_string occurs %d times in %s (at lines %s); include more of the surrounding lines in old_string so that it matches once, or set replace_all to true to replace all %d",
			n, rel, lineList(text, e.old, 10), n)
	}
	if !e.all {
		n = 1
	}
	if grown := len(text) + n*(len(e.new)-len(e.old)); grown > maxFileSize {
		return "", nil, fmt.Errorf("%s would be %s after the edit; a file may hold at most 4 MiB", rel, size(grown))
	}
	var b strings.Builder
	b.Grow(len(text) + n*(len(e.new)-len(e.old)))
	at := make([]int, 0, n)
	rest := text
	for range n {
		i := strings.Index(rest, e.old)
		b.WriteString(rest[:i])
		at = append(at, b.Len())
		b.WriteString(e.new)
		rest = rest[i+len(e.old):]
	}
	b.WriteString(rest)
	return b.String(), at, nil
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// lineList names the lines where the first few occurrences of s in text
// start: "4, 10 and 20", or "4, 10, ... (and 7 more)".
func lineList(text, s string, most int) string {
	var nums []string
	line, pos, more := 1, 0, 0
	for {
		i := strings.Index(text[pos:], s)
		if i < 0 {
			break
		}
		line += strings.Count(text[pos:pos+i], "\n")
		if len(nums) < most {
			nums = append(nums, strconv.Itoa(line))
		} else {
			more++
		}
		line += strings.Count(s, "\n")
		pos += i + len(s)
	}
	if more > 0 {
		return strings.Join(nums, ", ") + fmt.Sprintf(" and %d more", more)
	}
	return joinAnd(nums)
}

// joinAnd joins words as a list in a sentence: "a", "a and b", "a, b
// and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// describeEdit says what an edit changed: where the new text now is, and
// for a single replacement the lines around it, numbered as read numbers
// them.
func describeEdit(rel, updated string, at []int, inserted string) string {
	span := strings.Count(strings.TrimSuffix(inserted, "\n"), "\n")
	var spans []string
	first, last, more := 0, 0, 0
	line, prev := 1, 0
	for i, off := range at {
		line += strings.Count(updated[prev:off], "\n")
		prev = off
		if i == 0 {
			first, last = line, line+span
		}
		s := strconv.Itoa(line)
		if inserted != "" && span > 0 {
			s = fmt.Sprintf("%d-%d", line, line+span)
		}
		switch {
		case len(spans) > 0 && spans[len(spans)-1] == s:
		case len(spans) == 10:
			more++
		default:
			spans = append(spans, s)
		}
	}
	verb := "replaced " + plural(len(at), "occurrence", "occurrences") + " in "
	if inserted == "" {
		verb = "removed " + plural(len(at), "occurrence", "occurrences") + " from "
	}
	where := "line"
	if len(spans) > 1 || strings.Contains(spans[0], "-") {
		where = "lines"
	}
	list := joinAnd(spans)
	if more > 0 {
		list = strings.Join(spans, ", ") + fmt.Sprintf(" and %d more", more)
	}
	out := fmt.Sprintf("%s%s (%s %s)", verb, rel, where, list)
	if len(at) != 1 {
		return out
	}
	lines := splitLines(updated)
	return out + ":\n" + numberedLines(lines, max(first-3, 0), min(last+2, len(lines)))
}
