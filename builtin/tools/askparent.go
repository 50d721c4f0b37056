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

const (
	maxQuestion    = 2000
	maxSuggestions = 5
	maxSuggestion  = 500
)

// noAnswer is what ask_parent returns when nobody answered in time.
const noAnswer = "No answer came; decide for yourself and say in your report what you assumed."

const askParentDescription = `Ask the agent that gave you your task a question, and wait for the answer. Use it when the task is ambiguous in a way that changes your work, such as two plausible places or readings where the wrong choice would waste the run; not for what you can find out yourself.

Ask one specific question, and give the answers you think likely in suggestions. If no answer comes in time, decide for yourself and say in your report what you assumed.`

const askParentParams = `{
  "type": "object",
  "properties": {
    "question": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "The question, specific and complete on its own."},
    "suggestions": {"type": "array", "maxItems": 5, "items": {"type": "string"}, "description": "Up to 5 answers you think likely, so the answer can be a quick choice."}
  },
  "required": ["question"],
  "additionalProperties": false
}`

// AskParent returns the ask_parent tool: a child asks its parent a
// question through agenttypes.Env.Tree and gets the answer as the tool's
// result. See the package documentation for its output.
func AskParent() agenttypes.Tool {
	return newTreeTool("ask_parent", askParentDescription, askParentParams, true, runAskParent)
}

type askParentArgs struct {
	Question    string   `json:"question"`
	Suggestions []string `json:"suggestions"`
}

func runAskParent(ctx context.Context, env *agenttypes.Env, raw json.RawMessage) (string, error) {
	var a askParentArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", fmt.Errorf("ask_parent: %w", err)
	}
	q := agenttypes.Question{Text: strings.TrimSpace(a.Question)}
	switch n := utf8.RuneCountInString(q.Text); {
	case n == 0:
		return "", errors.New(`ask_parent: missing "question": write the question to ask`)
	case n > maxQuestion:
		return "", fmt.Errorf("ask_parent: the question is %d characters; ask in at most %d", n, maxQuestion)
	}
	if len(a.Suggestions) > maxSuggestions {
		return "", fmt.Errorf("ask_parent: %d suggestions; give at most %d, the likeliest", len(a.Suggestions), maxSuggestions)
	}
	for i, s := range a.Suggestions {
		s = strings.TrimSpace(s)
		switch n := utf8.RuneCountInString(s); {
		case n == 0:
			return "", fmt.Errorf("ask_parent: suggestions[%d] is empty; give each suggested answer as text, or leave it out", i)
		case n > maxSuggestion:
			return "", fmt.Errorf("ask_parent: suggestions[%d] is %d characters; keep each to %d", i, n, maxSuggestion)
		}
		q.Suggestions = append(q.Suggestions, s)
	}
	ans, err := env.Tree.AskParent(ctx, q)
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return "", err
	case errors.Is(err, agenttypes.ErrNoParent):
		return "", fmt.Errorf("ask_parent: you are a top-level agent, so there is no parent to ask (%w); decide for yourself and say in your report what you assumed", err)
	default:
		return "", fmt.Errorf("ask_parent: %w", err)
	}
	text := strings.TrimSpace(ans.Text)
	switch {
	case text == "":
		return noAnswer, nil
	case ans.By == "user":
		return "Answer from the user, to whom your parent passed your question: " + text, nil
	}
	return "Answer from your parent: " + text, nil
}
