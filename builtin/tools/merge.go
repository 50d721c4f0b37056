package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Bounds on what merge shows.
const (
	// mergeFilesShown bounds the files listed.
	mergeFilesShown = 100
	// hunksCap bounds the hunks shown of one conflicting file, and
	// hunksTotalCap those of all of them.
	hunksCap      = 4 << 10
	hunksTotalCap = 24 << 10
)

const mergeDescription = `Bring the changes of one of your subagents, which has ended, into your own workspace, with a three-way merge.

agent is the subagent's label or ID, as delegate's result gives them. The result lists the files the merge changed. When the subagent's changes conflict with yours, nothing is merged and your workspace stays as it was; the error lists the conflicting files and regions, so you can make the change yourself with edit.`

const mergeParams = `{
  "type": "object",
  "properties": {
    "agent": {"type": "string", "minLength": 1, "description": "The label or ID of a subagent of yours that has ended."}
  },
  "required": ["agent"],
  "additionalProperties": false
}`

// Merge returns the merge tool: it brings an ended child's changes
// (agenttypes.Tree.ChildChanges) into the calling agent's workspace
// (agenttypes.Workspace.Merge). See the package documentation.
func Merge() agenttypes.Tool {
	return newWorkspaceTool("merge", mergeDescription, mergeParams, runMerge)
}

type mergeArgs struct {
	Agent string `json:"agent"`
}

func runMerge(ctx context.Context, env *agenttypes.Env, raw json.RawMessage) (string, error) {
	var a mergeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	a.Agent = strings.TrimSpace(a.Agent)
	if a.Agent == "" {
		return "", errors.New(`missing "agent": give the label or ID of a subagent of yours that has ended`)
	}
	if env.Tree == nil {
		return "", errors.New("works only inside an agent run by a manager")
	}
	changes, err := env.Tree.ChildChanges(ctx, a.Agent)
	if err != nil {
		return "", err
	}
	if changes.Empty() {
		return fmt.Sprintf("agent %s changed no files; there is nothing to merge", oneLine(a.Agent)), nil
	}
	res, err := env.Workspace.Merge(ctx, changes)
	if err != nil {
		return "", err
	}
	if len(res.Conflicts) > 0 {
		return "", conflictError(a.Agent, changes, res.Conflicts)
	}
	return renderMerged(a.Agent, changes, res), nil
}

// renderMerged lists what a clean merge brought in.
func renderMerged(agent string, ch *agenttypes.Changes, res agenttypes.MergeResult) string {
	var b strings.Builder
	branch := ""
	if ch.Branch != "" {
		branch = "branch " + ch.Branch + ", "
	}
	fmt.Fprintf(&b, "merged the changes of agent %s (%s+%d -%d lines) into your workspace: %s",
		oneLine(agent), branch, ch.Insertions, ch.Deletions, plural(len(res.Files), "file", "files"))
	if len(res.Files) == 0 {
		b.WriteString("; your workspace already held them")
		return b.String()
	}
	writeFileList(&b, res.Files)
	return b.String()
}

func writeFileList(b *strings.Builder, files []string) {
	for i, f := range files {
		if i == mergeFilesShown {
			fmt.Fprintf(b, "\n... %d more files", len(files)-i)
			return
		}
		b.WriteString("\n")
		b.WriteString(QuotePath(f))
	}
}

// conflictError lists a merge's conflicts, their hunks bounded, and says
// what to do next.
func conflictError(agent string, ch *agenttypes.Changes, conflicts []agenttypes.Conflict) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the changes of agent %s conflict with your workspace in %s, so nothing was merged and your workspace is unchanged.\n",
		oneLine(agent), plural(len(conflicts), "file", "files"))
	b.WriteString("To bring the changes in, make them yourself with edit, using the regions below (between <<<<<<< and ======= is your side, between ======= and >>>>>>> the subagent's), or delegate the task again so that it is done on top of your current files, and merge that.")
	if ch.Branch != "" {
		fmt.Fprintf(&b, " The subagent's whole change is on branch %s.", ch.Branch)
	}
	b.WriteString("\n")
	left := hunksTotalCap
	for i, c := range conflicts {
		if i == mergeFilesShown {
			fmt.Fprintf(&b, "\n... %d more conflicting files", len(conflicts)-i)
			break
		}
		fmt.Fprintf(&b, "\nconflict in %s", QuotePath(c.Path))
		if c.Reason != "" {
			fmt.Fprintf(&b, " (%s)", oneLine(c.Reason))
		}
		switch {
		case c.Hunks == "":
		case left < 256:
			b.WriteString(": its regions are not shown, for room")
		default:
			hunks, shown := cutText(c.Hunks, min(hunksCap, left))
			left -= shown
			b.WriteString(":\n")
			b.WriteString(strings.TrimSuffix(hunks, "\n"))
			b.WriteString("\n")
		}
	}
	return errors.New(strings.TrimSuffix(b.String(), "\n"))
}

// cutText cuts s to at most limit bytes at a line end when there is one,
// and says how much was left out; it returns the text and the bytes of s
// it kept.
func cutText(s string, limit int) (string, int) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= limit {
		return s, len(s)
	}
	cut := strings.LastIndexByte(s[:limit], '\n') + 1
	if cut == 0 {
		cut = limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut] + fmt.Sprintf("[... %s more of this file's conflicting regions not shown]", size(len(s)-cut)), cut
}
