package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
)

const writeDescription = `Create a file, or replace the whole content of one, in your workspace (your own copy of the project; nothing outside it changes).

Parent directories are made as needed. content is the file's complete new text, at most 4 MiB. To change part of an existing file, prefer edit. Paths are relative to the workspace's top. Files inside .git, paths through symlinks and anything that is not a regular file are refused.`

const writeParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to create or replace, relative to the workspace's top."},
    "content": {"type": "string", "description": "The file's complete new content."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

// Write returns the write tool: it creates or replaces a file in the
// calling agent's workspace. See the package documentation.
func Write() agenttypes.Tool {
	return newWorkspaceTool("write", writeDescription, writeParams, runWrite)
}

type writeArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

func runWrite(ctx context.Context, env *agenttypes.Env, raw json.RawMessage) (string, error) {
	var a writeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		return "", errors.New(`missing "path": give the file to write, relative to the workspace's top`)
	}
	if a.Content == nil {
		return "", errors.New(`missing "content": give the file's complete new content ("" for an empty file)`)
	}
	if len(*a.Content) > maxFileSize {
		return "", fmt.Errorf("content is %s; write takes at most 4 MiB per file", size(len(*a.Content)))
	}
	root, err := workspaceRoot(env.Workspace)
	if err != nil {
		return "", err
	}
	defer root.Close()
	rel, err := root.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	// Under the lock, no other write or edit of the file runs between
	// the checks and the replace.
	defer lockFile(filepath.Join(root.Dir(), filepath.FromSlash(rel)))()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	t, err := resolveTarget(root, a.Path)
	if err != nil {
		return "", err
	}
	data := []byte(*a.Content)
	verb := "created"
	if t.info != nil {
		old, truncated, err := root.ReadFile(t.rel, maxFileSize)
		if err == nil && !truncated && bytes.Equal(old, data) {
			return fmt.Sprintf("%s already holds this content; nothing changed", t.rel), nil
		}
		verb = "replaced"
	}
	if err := put(root, t, data); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s (%s, %s)", verb, t.rel, plural(lineCount(*a.Content), "line", "lines"), fileSize(len(data))), nil
}

// lineCount counts the lines of text, a last line without a newline
// included.
func lineCount(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		n++
	}
	return n
}

// fileSize says n bytes, in KiB from 1 KiB on.
func fileSize(n int) string {
	if n < 1024 {
		return plural(n, "byte", "bytes")
	}
	return size(n)
}
