package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Changing returns the tools that change an agent's workspace: write,
// edit, run and merge. They act only in agenttypes.Env.Workspace and
// refuse to work for an agent that has none.
func Changing() []agenttypes.Tool {
	return []agenttypes.Tool{Write(), Edit(), Run(), Merge()}
}

// errNoWorkspace is the refusal of every changing tool called by an
// agent without a workspace of its own.
var errNoWorkspace = errors.New("this agent has no workspace of its own: only types that list write, edit, run or merge get one, and only their agents may change files or run commands")

// workspaceTool is a builtin tool that acts in the calling agent's own
// workspace, agenttypes.Env.Workspace.
type workspaceTool struct {
	spec agenttypes.ToolSpec
	run  func(ctx context.Context, env *agenttypes.Env, args json.RawMessage) (string, error)
}

func (t *workspaceTool) Spec() agenttypes.ToolSpec { return t.spec }

func (t *workspaceTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	env := agenttypes.EnvFrom(ctx)
	if env.Workspace == nil {
		return "", fmt.Errorf("%s: %w", t.spec.Name, errNoWorkspace)
	}
	out, err := t.run(ctx, env, args)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.spec.Name, err)
	}
	return out, nil
}

func newWorkspaceTool(name, description, params string, run func(context.Context, *agenttypes.Env, json.RawMessage) (string, error)) *workspaceTool {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(params)); err != nil {
		panic("tools: bad schema for " + name + ": " + err.Error())
	}
	return &workspaceTool{
		spec: agenttypes.ToolSpec{
			Name:        name,
			Description: description,
			Parameters:  json.RawMessage(buf.Bytes()),
			ReadOnly:    false,
		},
		run: run,
	}
}
