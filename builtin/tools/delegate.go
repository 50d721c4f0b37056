package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Limits of a delegate call beyond those of agenttypes.
const (
	maxLabel        = 32
	maxContextFiles = 10
	contextFileCap  = 16 << 10
	contextTotalCap = 64 << 10
	// contextMinShown: a file that would get less room than this is left
	// out with a note rather than shown as a stub.
	contextMinShown    = 1 << 10
	minOutputTokens    = 100
	maxOutputTokensCap = 16_384
	defaultChildType   = "explore"
)

const delegateDescription = `Hand tasks to subagents that work at the same time and report back to you. Use it for independent pieces of work, such as searching separate parts of the code or answering separate questions, whose results you then combine; do small lookups yourself.

Each subagent starts fresh: it sees only its prompt and its context files, not your conversation, so write every prompt as a complete task that says what to report. Subagents spend from your own budget, which also bounds theirs.

mode parallel (the default) waits for all of them and returns their results in task order, each with its status (ok, partial, failed or cancelled), usage and report; a partial report holds the subagent's notes. mode background returns a group ID at once: go on with your own work and call collect with that group to get the results.`

const delegateParams = `{
  "type": "object",
  "properties": {
    "tasks": {
      "type": "array",
      "minItems": 1,
      "maxItems": 8,
      "description": "The tasks, one subagent each, 1 to 8. Results come back in this order.",
      "items": {
        "type": "object",
        "properties": {
          "label": {"type": "string", "minLength": 1, "maxLength": 32, "description": "Short name of the task, different for each task, such as \"auth\"."},
          "type": {"type": "string", "description": "Agent type of the subagent. Default explore (finds where things are in the code and answers with file:line references)."},
          "prompt": {"type": "string", "minLength": 1, "description": "The subagent's task, complete on its own: what to find or do, and what to report."},
          "context": {"type": "array", "maxItems": 10, "items": {"type": "string"}, "description": "Up to 10 files, relative to the root, put in front of the prompt: at most 16 KiB of each and 64 KiB in all, cut with a note beyond that."},
          "tools": {"type": "array", "items": {"type": "string"}, "description": "Only these of the type's tools. Narrows; never adds a tool."},
          "model": {"type": "string", "description": "Model of the subagent, as provider:model. Default: the type's model, else yours."},
          "max_output_tokens": {"type": "integer", "minimum": 100, "maximum": 16384, "description": "Cap on each of the subagent's replies, in tokens."},
          "max_tokens": {"type": "integer", "minimum": 1, "description": "Token budget (input plus output) of the subagent."},
          "max_time": {"type": "string", "description": "Time budget of the subagent, a duration such as \"90s\" or \"5m\"."},
          "max_tool_calls": {"type": "integer", "minimum": 1, "description": "Most tool calls the subagent may make."},
          "max_turns": {"type": "integer", "minimum": 1, "description": "Most model calls the subagent may make."},
          "max_cost_usd": {"type": "number", "minimum": 0, "description": "Most the subagent may spend, in US dollars; above 0."},
          "resume": {"type": "string", "description": "ID of a subagent of yours that has ended: it continues its earlier conversation with this prompt instead of starting fresh."}
        },
        "required": ["label", "prompt"],
        "additionalProperties": false
      }
    },
    "concurrency": {"type": "integer", "minimum": 1, "maximum": 4, "description": "How many of the subagents run at once, 1 to 4. Default 2."},
    "mode": {"type": "string", "enum": ["parallel", "background"], "description": "parallel (default): wait for all and return their results. background: return a group ID at once; collect gets the results."},
    "return": {"type": "string", "enum": ["markdown", "json"], "description": "Format of the results. Default markdown."}
  },
  "required": ["tasks"],
  "additionalProperties": false
}`

// Delegate returns the delegate tool: it hands tasks to children of the
// calling agent through agenttypes.Env.Tree. See the package
// documentation for its arguments and output.
func Delegate() agenttypes.Tool {
	return newTreeTool("delegate", delegateDescription, delegateParams, false, runDelegate)
}

// Delegation returns the tools that act on the agent tree: delegate,
// collect and ask_parent.
func Delegation() []agenttypes.Tool {
	return []agenttypes.Tool{Delegate(), Collect(), AskParent()}
}

// rawObject holds one element of an array of objects undecoded, so that
// each can be decoded strictly on its own and its errors name it.
type rawObject []byte

func (r *rawObject) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

type delegateArgs struct {
	Tasks       []rawObject `json:"tasks"`
	Concurrency *int        `json:"concurrency"`
	Mode        string      `json:"mode"`
	Return      string      `json:"return"`
}

type taskArgs struct {
	Label           string          `json:"label"`
	Type            string          `json:"type"`
	Prompt          string          `json:"prompt"`
	Context         []string        `json:"context"`
	Tools           []string        `json:"tools"`
	Model           string          `json:"model"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	MaxTokens       *int            `json:"max_tokens"`
	MaxTime         json.RawMessage `json:"max_time"`
	MaxToolCalls    *int            `json:"max_tool_calls"`
	MaxTurns        *int            `json:"max_turns"`
	MaxCostUSD      *float64        `json:"max_cost_usd"`
	Resume          string          `json:"resume"`
}

func runDelegate(ctx context.Context, env *agenttypes.Env, raw json.RawMessage) (string, error) {
	req, format, err := parseDelegate(env, raw)
	if err != nil {
		return "", fmt.Errorf("delegate: %w", err)
	}
	resp, err := env.Tree.Delegate(ctx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return "", err
		}
		return "", fmt.Errorf("cannot spawn subagents: %w", err)
	}
	if resp == nil {
		return "", errors.New("cannot spawn subagents: the manager returned no response")
	}
	if req.Background {
		return renderStarted(resp, format), nil
	}
	return renderResults(resp.Results, format), nil
}

// parseDelegate checks the arguments and builds the request, with the
// context files read from the agent's directory into the prompts.
func parseDelegate(env *agenttypes.Env, raw json.RawMessage) (agenttypes.DelegateRequest, string, error) {
	var req agenttypes.DelegateRequest
	var a delegateArgs
	if err := decodeArgs(raw, &a); err != nil {
		return req, "", err
	}
	format, err := checkFormat(a.Return)
	if err != nil {
		return req, "", err
	}
	if err := a.options(&req); err != nil {
		return req, "", err
	}
	if err := checkTaskCount(len(a.Tasks)); err != nil {
		return req, "", err
	}
	if req.Tasks, err = parseTasks(env, a.Tasks); err != nil {
		return req, "", err
	}
	return req, format, nil
}

// options sets the mode and concurrency a call asks for on req, the
// default concurrency when it asks for none.
func (a delegateArgs) options(req *agenttypes.DelegateRequest) error {
	switch a.Mode {
	case "", "parallel":
	case "background":
		req.Background = true
	default:
		return fmt.Errorf(`mode is %q; use "parallel" (the default: wait for the results) or "background" (return a group ID at once)`, a.Mode)
	}
	req.Concurrency = agenttypes.DefaultDelegateConcurrency
	if a.Concurrency != nil {
		if *a.Concurrency < 1 || *a.Concurrency > agenttypes.MaxDelegateConcurrency {
			return fmt.Errorf("concurrency is %d; give 1 to %d (default %d)", *a.Concurrency, agenttypes.MaxDelegateConcurrency, agenttypes.DefaultDelegateConcurrency)
		}
		req.Concurrency = *a.Concurrency
	}
	return nil
}

// checkTaskCount refuses a call with no task or with more than a call
// may give.
func checkTaskCount(n int) error {
	switch {
	case n == 0:
		return fmt.Errorf(`missing "tasks": give 1 to %d tasks, each with a label and a prompt`, agenttypes.MaxDelegateTasks)
	case n > agenttypes.MaxDelegateTasks:
		return fmt.Errorf("%d tasks is too many: give at most %d per call; merge related tasks, or delegate the rest when these have finished", n, agenttypes.MaxDelegateTasks)
	}
	return nil
}

// parseTasks checks each task and builds it, its context files read from
// the agent's directory into its prompt. The first wrong task's error names it.
func parseTasks(env *agenttypes.Env, objs []rawObject) ([]agenttypes.ChildTask, error) {
	files := &contextRoot{env: env}
	defer files.close()
	var tasks []agenttypes.ChildTask
	labels := map[string]int{}
	for i, obj := range objs {
		t, name, err := decodeTask(i, obj, labels)
		if err != nil {
			return nil, err
		}
		task, err := buildTask(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(t.Context) > 0 {
			if task.Prompt, err = files.prepend(t.Context, task.Prompt); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		tasks = append(tasks, task)
	}
	return tasks, nil
}

// decodeTask decodes tasks[i] and checks its label, which must differ
// from the labels of the tasks before it (labels, which it adds to). name
// is what errors about the task call it; an error it returns names it
// already.
func decodeTask(i int, obj rawObject, labels map[string]int) (t taskArgs, name string, err error) {
	name = fmt.Sprintf("tasks[%d]", i)
	if bytes.HasPrefix(bytes.TrimSpace(obj), []byte("{")) {
		if err := decodeArgs(json.RawMessage(obj), &t); err != nil {
			return t, name, fmt.Errorf("%s: %w", name, err)
		}
	} else {
		return t, name, fmt.Errorf("%s must be an object with fields %s", name, strings.Join(fieldNames(&t), ", "))
	}
	if t.Label != "" {
		name = fmt.Sprintf("tasks[%d] (%q)", i, t.Label)
	}
	if err := checkLabel(t.Label); err != nil {
		return t, name, fmt.Errorf("%s: %w", name, err)
	}
	if j, dup := labels[t.Label]; dup {
		return t, name, fmt.Errorf("%s: label %q is also the label of tasks[%d]; give each task its own label", name, t.Label, j)
	}
	labels[t.Label] = i
	return t, name, nil
}

// contextRoot is the agent's directory, which tasks' context files are
// read from. It is opened the first time a task names context files, and
// only then: most calls name none, and an agent may have no directory.
type contextRoot struct {
	env  *agenttypes.Env
	root *fsroot.Root
}

// prepend reads the context files paths and puts them before prompt.
func (c *contextRoot) prepend(paths []string, prompt string) (string, error) {
	if c.root == nil {
		if c.env.Dir == "" {
			return "", errors.New("context files need the agent's directory (agenttypes.Env.Dir), and there is none; put what the subagent needs in the prompt")
		}
		root, err := agentRoot(c.env)
		if err != nil {
			return "", err
		}
		c.root = root
	}
	ctxText, err := readContext(c.root, paths)
	if err != nil {
		return "", err
	}
	return ctxText + "Your task:\n\n" + prompt, nil
}

// close closes the directory if a task opened it.
func (c *contextRoot) close() {
	if c.root != nil {
		c.root.Close()
	}
}

func checkLabel(label string) error {
	switch n := utf8.RuneCountInString(label); {
	case strings.TrimSpace(label) == "":
		return errors.New(`missing "label": give the task a short name such as "auth"`)
	case n > maxLabel:
		return fmt.Errorf("label %q is %d characters; use at most %d", label, n, maxLabel)
	case strings.IndexFunc(label, unicode.IsControl) >= 0:
		return fmt.Errorf("label %q holds a control character; use a short name on one line", label)
	}
	return nil
}

// buildTask checks one task's arguments other than its label and context
// and turns them into a ChildTask.
func buildTask(t taskArgs) (agenttypes.ChildTask, error) {
	task := agenttypes.ChildTask{Label: t.Label, Type: t.Type, Prompt: t.Prompt, Model: t.Model, Resume: t.Resume}
	if strings.TrimSpace(t.Prompt) == "" {
		return task, errors.New(`prompt is empty: write the subagent's task, complete on its own, and what it should report`)
	}
	if task.Type == "" && task.Resume == "" {
		// A resumed agent keeps its own type unless the task names one.
		task.Type = defaultChildType
	}
	for _, name := range t.Tools {
		if strings.TrimSpace(name) == "" {
			return task, errors.New("tools holds an empty name; list tool names such as \"read\" and \"grep\", or leave tools out to keep all of the type's tools")
		}
	}
	task.Tools = t.Tools
	if len(t.Context) > maxContextFiles {
		return task, fmt.Errorf("context lists %d files; give at most %d, the most relevant (the subagent can read others itself)", len(t.Context), maxContextFiles)
	}
	if t.MaxOutputTokens != nil {
		if n := *t.MaxOutputTokens; n < minOutputTokens || n > maxOutputTokensCap {
			return task, fmt.Errorf("max_output_tokens is %d; give %d to %d, or leave it out", n, minOutputTokens, maxOutputTokensCap)
		}
		task.MaxOutputTokens = *t.MaxOutputTokens
	}
	for _, f := range []struct {
		name string
		v    *int
		dst  *int
	}{
		{"max_tokens", t.MaxTokens, &task.Budget.MaxTokens},
		{"max_tool_calls", t.MaxToolCalls, &task.Budget.MaxToolCalls},
		{"max_turns", t.MaxTurns, &task.Budget.MaxTurns},
	} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return task, fmt.Errorf("%s is %d; give a positive number, or leave it out for the type's budget", f.name, *f.v)
		}
		*f.dst = *f.v
	}
	if t.MaxCostUSD != nil {
		if c := *t.MaxCostUSD; c <= 0 || math.IsInf(c, 0) || math.IsNaN(c) {
			return task, fmt.Errorf("max_cost_usd is %v; give an amount above 0 such as 0.50, or leave it out", c)
		}
		task.Budget.MaxCostUSD = *t.MaxCostUSD
	}
	if len(t.MaxTime) > 0 && string(t.MaxTime) != "null" {
		d, err := parseMaxTime(t.MaxTime)
		if err != nil {
			return task, err
		}
		task.Budget.MaxTime = d
	}
	return task, nil
}

func parseMaxTime(raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf(`max_time is %s; give a duration string with its unit, such as "90s" or "5m"`, raw)
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf(`max_time %q is not a duration; give one with its unit, such as "90s", "5m" or "1m30s"`, s)
	}
	if d <= 0 {
		return 0, fmt.Errorf(`max_time is %q; give a positive duration such as "90s", or leave it out`, s)
	}
	return d, nil
}

// readContext reads the context files of one task through root, with the
// caps of the read tool's resolver and the per-file and total caps here,
// and returns them as the text that goes in front of the prompt. A path
// outside the root, a missing file, a directory or a binary file is an
// error: the model can correct the list.
func readContext(root *fsroot.Root, paths []string) (string, error) {
	var b strings.Builder
	b.WriteString("Context files, read for you from the repository:\n\n")
	left := contextTotalCap
	seen := map[string]bool{}
	for _, p := range paths {
		rel, err := root.Resolve(p)
		if err != nil {
			return "", fmt.Errorf("context file: %w", err)
		}
		if seen[rel] {
			continue
		}
		seen[rel] = true
		fmt.Fprintf(&b, "<file path=%q>\n", rel)
		if left < contextMinShown {
			// Checked still, so that a bad path is reported whatever its
			// place in the list.
			if _, err := root.Stat(rel); err != nil {
				return "", fmt.Errorf("context file: %w", err)
			}
			fmt.Fprintf(&b, "[not included: the context files of this task reached %s in all; read %s yourself]\n</file>\n\n", size(contextTotalCap), rel)
			continue
		}
		limit := min(contextFileCap, left)
		data, more, err := root.ReadFile(rel, int64(limit+utf8.UTFMax))
		if err != nil {
			return "", fmt.Errorf("context file: %w", err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return "", fmt.Errorf("context file %s is a binary file; context takes text files only", rel)
		}
		if !more && len(data) <= limit {
			left -= len(data)
			if len(data) == 0 {
				b.WriteString("(empty file)\n")
			} else {
				b.Write(data)
				if data[len(data)-1] != '\n' {
					b.WriteByte('\n')
				}
			}
			b.WriteString("</file>\n\n")
			continue
		}
		full := len(data)
		if fi, err := root.Stat(rel); err == nil {
			full = int(fi.Size())
		}
		n := limit
		for n > 0 && !utf8.RuneStart(data[n]) {
			n--
		}
		// Cut at a line end when one is near; a file of very long lines
		// is cut inside one rather than shown nearly empty.
		if nl := bytes.LastIndexByte(data[:n], '\n'); nl >= 0 && nl+1 >= n*3/4 {
			n = nl + 1
		}
		rest := "the rest is in the file"
		if lines := bytes.Count(data[:n], []byte("\n")); lines > 0 {
			rest = fmt.Sprintf("read the file from line %d (offset=%d) for the rest", lines+1, lines+1)
		}
		left -= n
		b.Write(data[:n])
		if n > 0 && data[n-1] != '\n' {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[... cut here: %s of %s shown; %s]\n</file>\n\n", size(n), size(full), rest)
	}
	return b.String(), nil
}
