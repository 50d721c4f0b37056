package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

func TestAskParentAnswers(t *testing.T) {
	tests := []struct {
		name   string
		answer agenttypes.Answer
		want   string
	}{
		{"parent's model", agenttypes.Answer{Text: "Prioritise the session cookies.", By: "parent"}, "Answer from your parent: Prioritise the session cookies."},
		{"handler", agenttypes.Answer{Text: " the API tokens\n", By: "handler"}, "Answer from your parent: the API tokens"},
		{"user", agenttypes.Answer{Text: "both", By: "user"}, "Answer from the user, to whom your parent passed your question: both"},
		{"nobody", agenttypes.Answer{}, "No answer came; decide for yourself and say in your report what you assumed."},
		{"blank", agenttypes.Answer{Text: "  ", By: "parent"}, "No answer came; decide for yourself and say in your report what you assumed."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := &fakeTree{answer: tt.answer}
			out, err := callTree(context.Background(), tools.AskParent(), tree, "",
				`{"question":" Two authentication schemes: which first? ","suggestions":["session cookies"," API tokens "]}`)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			assert.Equal(t, []agenttypes.Question{{Text: "Two authentication schemes: which first?", Suggestions: []string{"session cookies", "API tokens"}}}, tree.asked)
		})
	}
}

func TestAskParentErrors(t *testing.T) {
	six := `"a","b","c","d","e","f"`
	tests := []struct {
		name, args string
		tree       *fakeTree
		want       string
	}{
		{"no question", `{}`, &fakeTree{}, `ask_parent: missing "question": write the question to ask`},
		{"blank question", `{"question":" \n"}`, &fakeTree{}, `ask_parent: missing "question": write the question to ask`},
		{"question too long", `{"question":"` + strings.Repeat("é", 2001) + `"}`, &fakeTree{}, "ask_parent: the question is 2001 characters; ask in at most 2000"},
		{"6 suggestions", `{"question":"q","suggestions":[` + six + `]}`, &fakeTree{}, "ask_parent: 6 suggestions; give at most 5, the likeliest"},
		{"empty suggestion", `{"question":"q","suggestions":["a",""]}`, &fakeTree{}, "ask_parent: suggestions[1] is empty; give each suggested answer as text, or leave it out"},
		{"long suggestion", `{"question":"q","suggestions":["` + strings.Repeat("x", 501) + `"]}`, &fakeTree{}, "ask_parent: suggestions[0] is 501 characters; keep each to 500"},
		{"suggestions as a string", `{"question":"q","suggestions":"a or b"}`, &fakeTree{}, `ask_parent: argument "suggestions" must be an array of strings, not a JSON string`},
		{"unknown field", `{"question":"q","options":["a"]}`, &fakeTree{}, `ask_parent: unknown argument "options"; valid arguments are question, suggestions`},
		{"top-level agent", `{"question":"q"}`, &fakeTree{askErr: agenttypes.ErrNoParent},
			"ask_parent: you are a top-level agent, so there is no parent to ask (agent has no parent); decide for yourself and say in your report what you assumed"},
		{"tree error", `{"question":"q"}`, &fakeTree{askErr: errors.New("manager closed")}, "ask_parent: manager closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := callTree(context.Background(), tools.AskParent(), tt.tree, "", tt.args)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			if tt.tree.askErr == nil {
				assert.Empty(t, tt.tree.asked, "a bad question is not asked")
			} else {
				assert.ErrorIs(t, err, tt.tree.askErr)
			}
		})
	}
}

func TestAskParentLimitsAtTheirEdges(t *testing.T) {
	tree := &fakeTree{answer: agenttypes.Answer{Text: "ok", By: "parent"}}
	var sugg []string
	for i := range 5 {
		sugg = append(sugg, fmt.Sprintf("%q", strings.Repeat(string(rune('a'+i)), 500)))
	}
	_, err := callTree(context.Background(), tools.AskParent(), tree, "",
		`{"question":"`+strings.Repeat("é", 2000)+`","suggestions":[`+strings.Join(sugg, ",")+`]}`)
	require.NoError(t, err)
	require.Len(t, tree.asked, 1)
	assert.Len(t, tree.asked[0].Suggestions, 5)
}
