package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

const (
	// maxCollectWait is the longest collect waits, in seconds.
	maxCollectWait = 600
	// cancelGrace is how long collect with cancel waits, when wait does
	// not say, for the cancelled children to end, so that their results
	// show as cancelled rather than running.
	cancelGrace = 10 * time.Second
)

const collectDescription = `Get the results of a background group that you started with delegate (mode background): the results of the subagents that have ended, in task order, and which are still running.

wait (seconds, up to 600) waits that long for the group to finish; 0, the default, answers at once. cancel: true stops the subagents of the group that are still running, then returns what the group has, the stopped ones as cancelled.`

const collectParams = `{
  "type": "object",
  "properties": {
    "group": {"type": "string", "minLength": 1, "description": "The group ID a delegate call with mode background returned."},
    "wait": {"type": "number", "minimum": 0, "maximum": 600, "description": "Seconds to wait for the group to finish, 0 to 600. Default 0: answer at once."},
    "cancel": {"type": "boolean", "description": "Stop the subagents of the group that are still running. Default false."},
    "return": {"type": "string", "enum": ["markdown", "json"], "description": "Format of the results. Default markdown."}
  },
  "required": ["group"],
  "additionalProperties": false
}`

// Collect returns the collect tool: it reports a background group of the
// calling agent through agenttypes.Env.Tree, and can cancel it. See the
// package documentation for its arguments and output.
func Collect() agenttypes.Tool {
	return newTreeTool("collect", collectDescription, collectParams, true, runCollect)
}

type collectArgs struct {
	Group  string   `json:"group"`
	Wait   *float64 `json:"wait"`
	Cancel bool     `json:"cancel"`
	Return string   `json:"return"`
}

func runCollect(ctx context.Context, env *agenttypes.Env, raw json.RawMessage) (string, error) {
	var a collectArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", fmt.Errorf("collect: %w", err)
	}
	format, err := checkFormat(a.Return)
	if err != nil {
		return "", fmt.Errorf("collect: %w", err)
	}
	a.Group = strings.TrimSpace(a.Group)
	if a.Group == "" {
		return "", errors.New(`collect: missing "group": give the group ID a delegate call with mode background returned`)
	}
	var wait time.Duration
	if a.Wait != nil {
		w := *a.Wait
		if w < 0 || w > maxCollectWait || math.IsNaN(w) {
			return "", fmt.Errorf("collect: wait is %v; give 0 to %d seconds", w, maxCollectWait)
		}
		wait = time.Duration(w * float64(time.Second))
	}
	if a.Cancel {
		if err := env.Tree.CancelGroup(ctx, a.Group); err != nil {
			return "", groupError(ctx, err)
		}
		if a.Wait == nil {
			wait = cancelGrace
		}
	}
	resp, err := env.Tree.Collect(ctx, agenttypes.CollectRequest{Group: a.Group, Wait: wait})
	if err != nil {
		return "", groupError(ctx, err)
	}
	if resp == nil {
		return "", errors.New("collect: the manager returned no response")
	}
	return renderCollected(resp, format, a.Cancel), nil
}

func groupError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return err
	}
	if errors.Is(err, agenttypes.ErrUnknownGroup) {
		return fmt.Errorf("collect: %w; give a group ID that one of your delegate calls with mode background returned", err)
	}
	return fmt.Errorf("collect: %w", err)
}
