package builtin

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/offline"
	"github.com/troupe-dev/troupe/builtin/tools"
)

//go:embed prompts/*.md
var prompts embed.FS

// Source is the Source of every builtin type.
const Source = "builtin"

// readTools are what every builtin type may call.
var readTools = []string{"read", "grep", "symbols", "glob", "ls", "git", "note"}

// delegatingTools are readTools and the tools that hand work to children.
// A manager offers delegate and collect only to an agent below its depth
// limit, so a child at the limit never sees them. ask_parent is in no
// type's list: the manager grants it to every child.
var delegatingTools = append(slices.Clone(readTools), "delegate", "collect")

// fullTools are every builtin tool a type lists: reading, delegating,
// and changing files in a workspace of its own.
var fullTools = slices.Concat(delegatingTools, agenttypes.ChangingTools)

// DefaultRunAllow are the commands the general type may run unless a
// trusted project's config gives its own list: the usual build and test
// commands.
var DefaultRunAllow = []string{
	"go build", "go test", "go vet", "make", "npm test", "npm run build",
	"cargo build", "cargo test", "pytest",
}

// Tools returns the builtin tools: the read-only file tools, note, the
// tools that act on the agent tree (delegate, collect, ask_parent), and
// those that change an agent's own workspace (write, edit, run, merge).
func Tools() []agenttypes.Tool {
	return slices.Concat(tools.ReadOnly(), []agenttypes.Tool{Note()}, tools.Delegation(), tools.Changing())
}

// Types returns the builtin types.
func Types() []agenttypes.Type {
	return []agenttypes.Type{
		{
			Name:        "explore",
			Description: "Finds where things are in a repository and answers with file:line references. Read-only; works offline.",
			Prompt:      prompt("explore"),
			Tools:       delegatingTools,
			Budget:      agenttypes.Budget{MaxTokens: 200_000, MaxTime: 5 * time.Minute, MaxToolCalls: 60, MaxTurns: 25},
			ParseOutput: parseFindings,
			Source:      Source,
		},
		{
			Name:               "plan",
			Description:        "Studies the code a change touches and writes a step-by-step implementation plan. Read-only.",
			Prompt:             prompt("plan"),
			Tools:              readTools,
			Budget:             agenttypes.Budget{MaxTokens: 400_000, MaxTime: 10 * time.Minute, MaxToolCalls: 100, MaxTurns: 40},
			NeedsLanguageModel: true,
			Source:             Source,
		},
		{
			Name:               "review",
			Description:        "Reviews a change (by default the uncommitted diff) and lists findings by severity. Read-only.",
			Prompt:             prompt("review"),
			Tools:              readTools,
			Budget:             agenttypes.Budget{MaxTokens: 400_000, MaxTime: 10 * time.Minute, MaxToolCalls: 100, MaxTurns: 40},
			NeedsLanguageModel: true,
			Source:             Source,
		},
		{
			Name:               "general",
			Description:        "Does a general task: reads, changes files in a workspace of its own, runs the build and tests, delegates; answers in Markdown.",
			Prompt:             prompt("general"),
			Tools:              fullTools,
			Run:                agenttypes.RunPolicy{Allow: slices.Clone(DefaultRunAllow), Timeout: 10 * time.Minute},
			Budget:             agenttypes.Budget{MaxTokens: 400_000, MaxTime: 10 * time.Minute, MaxToolCalls: 100, MaxTurns: 40},
			NeedsLanguageModel: true,
			Source:             Source,
		},
	}
}

// Register adds the builtin tools and types to reg. It fails, adding
// nothing more, at the first name reg already has.
func Register(reg *agenttypes.Registry) error {
	for _, t := range Tools() {
		if err := reg.RegisterTool(t); err != nil {
			return fmt.Errorf("builtin: %w", err)
		}
	}
	for _, t := range Types() {
		if err := reg.RegisterType(t); err != nil {
			return fmt.Errorf("builtin: %w", err)
		}
	}
	return nil
}

func prompt(name string) string {
	b, err := prompts.ReadFile("prompts/" + name + ".md")
	if err != nil {
		panic("builtin: missing embedded prompt " + name) // a build mistake, caught by tests
	}
	return string(b)
}

// Findings is the structured result of the explore type.
type Findings struct {
	Findings []offline.Finding `json:"findings"`
}

func parseFindings(output string) (any, error) {
	f := offline.ParseFindings(output)
	if f == nil {
		f = []offline.Finding{}
	}
	return Findings{Findings: f}, nil
}

// Note returns the note tool: it appends text to the calling agent's
// scratchpad, which is returned when the run is cut short.
func Note() agenttypes.Tool {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{
			Name:        "note",
			Description: "Append a short note to your scratchpad. Notes are returned with your partial answer if you run out of budget, so record findings as you go.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the note"}},"required":["text"],"additionalProperties":false}`),
			ReadOnly:    true,
		},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct {
				Text string `json:"text"`
			}
			dec := json.NewDecoder(strings.NewReader(string(args)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return "", fmt.Errorf("note takes {\"text\": \"...\"}: %w", err)
			}
			if _, end := dec.Token(); end != io.EOF {
				return "", errors.New("note takes {\"text\": \"...\"}: unexpected data after the arguments object")
			}
			if strings.TrimSpace(in.Text) == "" {
				return "", errors.New("note: text is empty; write what you want to remember")
			}
			agenttypes.EnvFrom(ctx).Note(in.Text)
			return "noted", nil
		},
	}
}
