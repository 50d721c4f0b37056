package builtin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/tools"
	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/sdktest"
)

// asSDK makes a builtin tool an sdk.Tool, as a plugin host would: the
// calling agent's ID and directory, and tree, reach the tool through its
// agenttypes.Env.
type asSDK struct {
	tool agenttypes.Tool
	tree agenttypes.Tree
}

func (a asSDK) Spec() sdk.ToolSpec {
	s := a.tool.Spec()
	return sdk.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters, ReadOnly: s.ReadOnly}
}

func (a asSDK) Call(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
	env := &agenttypes.Env{AgentID: req.Agent.ID, Dir: req.Agent.Dir, Note: func(string) {}, Tree: a.tree}
	text, err := a.tool.Call(agenttypes.WithEnv(ctx, env), req.Args)
	if err != nil {
		return nil, err
	}
	return &sdk.CallResponse{Text: text}, nil
}

// waitingTree answers every request of the tree tools at once, except
// those marked "wait", which wait for their context as a slow child or
// parent would.
type waitingTree struct{}

func (waitingTree) Delegate(ctx context.Context, req agenttypes.DelegateRequest) (*agenttypes.DelegateResponse, error) {
	resp := &agenttypes.DelegateResponse{Group: "g-1"}
	for _, t := range req.Tasks {
		if t.Label == "wait" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		resp.Children = append(resp.Children, agenttypes.ChildRef{Label: t.Label, ID: "a-" + t.Label})
		resp.Results = append(resp.Results, agenttypes.ChildResult{Label: t.Label, ID: "a-" + t.Label, Type: "explore", Model: "m",
			Status: agenttypes.ChildOK, Reason: "done", Report: "report of " + t.Label})
	}
	return resp, nil
}

func (waitingTree) Collect(ctx context.Context, req agenttypes.CollectRequest) (*agenttypes.CollectResponse, error) {
	if req.Group == "wait" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if req.Group != "g-1" {
		return nil, agenttypes.ErrUnknownGroup
	}
	return &agenttypes.CollectResponse{Group: req.Group, Done: true, Results: []agenttypes.ChildResult{
		{Label: "a", ID: "a-a", Type: "explore", Model: "m", Status: agenttypes.ChildOK, Reason: "done", Report: "report of a"},
	}}, nil
}

func (waitingTree) CancelGroup(context.Context, string) error { return nil }

func (waitingTree) ChildChanges(context.Context, string) (*agenttypes.Changes, error) {
	return nil, nil
}

func (waitingTree) AskParent(ctx context.Context, q agenttypes.Question) (agenttypes.Answer, error) {
	if strings.Contains(q.Text, "wait") {
		<-ctx.Done()
		return agenttypes.Answer{}, ctx.Err()
	}
	return agenttypes.Answer{Text: "the first", By: "parent"}, nil
}

// conformanceRepo is a git repository with one commit and a few files.
func conformanceRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.txt":          "alpha\nbeta\n",
		"src/main.go":    "package main\n\n// TODO: greet\nfunc main() {}\n",
		"docs/readme.md": "# Readme\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	if _, err := exec.LookPath("git"); err != nil {
		return dir
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
			"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com",
			"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

// TestBuiltinToolsConform runs the plugin SDK's conformance suite against
// every builtin tool, so the builtin tools keep the promises asked of a
// plugin's.
func TestBuiltinToolsConform(t *testing.T) {
	dir := conformanceRepo(t)
	agent := sdk.Agent{ID: "agent-1", Dir: dir}
	tree := waitingTree{}
	ok := func(args string, want ...string) sdktest.Case {
		return sdktest.Case{Args: args, Agent: agent, Want: want, Deterministic: true}
	}
	bad := func(args string, want ...string) sdktest.Case {
		return sdktest.Case{Args: args, Agent: agent, Want: want, WantErr: true}
	}
	slow := func(args string) sdktest.Case {
		return sdktest.Case{Name: "waits for " + args, Args: args, Agent: agent, Slow: true}
	}
	tests := []struct {
		tool  agenttypes.Tool
		cases []sdktest.Case
	}{
		{tools.Read(), []sdktest.Case{
			ok(`{"path":"a.txt"}`, "     1\talpha", "     2\tbeta"),
			ok(`{"path":"a.txt","offset":2,"limit":1}`, "beta"),
			bad(`{"path":"../outside.txt"}`),
			bad(`{"path":"missing.txt"}`),
		}},
		{tools.Grep(), []sdktest.Case{
			ok(`{"pattern":"TODO"}`, "src/main.go:3:// TODO: greet"),
			ok(`{"pattern":"ALPHA","ignore_case":true,"glob":"*.txt"}`, "a.txt:1:alpha"),
			bad(`{"pattern":"("}`),
		}},
		{tools.Glob(), []sdktest.Case{
			ok(`{"pattern":"**/*.go"}`, "src/main.go"),
			ok(`{"pattern":"*.md","path":"docs"}`, "docs/readme.md"),
			bad(`{"pattern":"*","path":"/"}`),
		}},
		{tools.Ls(), []sdktest.Case{
			ok(`{}`, "a.txt\t11", "src/"),
			ok(`{"path":"src"}`, "main.go"),
			bad(`{"path":".."}`),
		}},
		{tools.Git(), []sdktest.Case{
			ok(`{"args":["log","--oneline"]}`, "first"),
			ok(`{"args":["status"]}`),
			bad(`{"args":["push"]}`),
			bad(`{"args":["diff","--output=/tmp/x"]}`),
		}},
		{builtin.Note(), []sdktest.Case{
			ok(`{"text":"remember the TODO"}`, "noted"),
			bad(`{"text":" "}`, "text is empty"),
		}},
		{tools.Delegate(), []sdktest.Case{
			ok(`{"tasks":[{"label":"a","prompt":"find the TODOs"}]}`, "report of a"),
			ok(`{"tasks":[{"label":"a","prompt":"read it","context":["a.txt"]}],"return":"json"}`, `"report": "report of a"`),
			bad(`{"tasks":[{"label":"a","prompt":"x","context":["../outside"]}]}`),
			slow(`{"tasks":[{"label":"wait","prompt":"take your time"}]}`),
		}},
		{tools.Collect(), []sdktest.Case{
			ok(`{"group":"g-1"}`, "report of a"),
			bad(`{"group":"g-2"}`, "unknown group"),
			slow(`{"group":"wait"}`),
		}},
		{tools.AskParent(), []sdktest.Case{
			ok(`{"question":"which one?","suggestions":["the first","the second"]}`, "Answer from your parent: the first"),
			bad(`{"question":""}`),
			slow(`{"question":"wait for me?"}`),
		}},
	}
	for _, tt := range tests {
		name := tt.tool.Spec().Name
		t.Run(name, func(t *testing.T) {
			if name == "git" {
				if _, err := exec.LookPath("git"); err != nil {
					t.Skip("git is not installed")
				}
			}
			t.Parallel()
			sdktest.TestTool(t, asSDK{tool: tt.tool, tree: tree}, tt.cases...)
		})
	}
}
