package agenttypes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

func TestCompilePromptRefusesUnboundedTemplates(t *testing.T) {
	for name, tc := range map[string]struct{ prompt, msg string }{
		"range over a number":   {`{{range 100000000}}x{{end}}`, "range only over a field"},
		"range over a function": {`{{range (slice .Tools 0)}}x{{end}}`, "range only over a field"},
		// A number reaches a range through a variable or a with; the
		// body writes nothing, so the size cap would never stop it.
		"range over a variable holding a number":    {`{{$n := 100000000}}{{range $n}}{{end}}`, "range only over a field"},
		"range over a with's number":                {`{{with 100000000}}{{range .}}{{end}}{{end}}`, "range only over a field"},
		"range over a reassigned variable":          {`{{$t := .Tools}}{{$t = 100000000}}{{range $t}}{{end}}`, "range only over a field"},
		"range over a variable reassigned in an if": {`{{$t := .Tools}}{{if true}}{{$t = 100000000}}{{end}}{{range $t}}{{end}}`, "range only over a field"},
		"range over a range's index":                {`{{range $i, $t := .Tools}}{{range $i}}{{end}}{{end}}`, "range only over a field"},
		"range over a string field":                 {`{{range .Dir}}x{{end}}`, "range only over a field"},
		"range over a length":                       {`{{$n := len .Tools}}{{range $n}}{{end}}`, "range only over a field"},
		"ranges nested three deep":                  {`{{range .Tools}}{{range $.Tools}}{{range $.Tools}}x{{end}}{{end}}{{end}}`, "nest at most 2 deep"},
		"printf with a width":                       {`{{printf "%999999999d" 1}}`, "printf is not available"},
		"print in a pipeline":                       {`{{.Dir | print}}`, "print is not available"},
		"define":                                    {`{{define "a"}}x{{end}}{{template "a"}}`, "define and block"},
		"template call":                             {`{{template "x"}}`, "{{template}} is not allowed"},
		"does not parse":                            {`{{.Dir`, "unclosed action"},
		"too long":                                  {strings.Repeat("x", agenttypes.MaxPromptBytes+1), "the limit is"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := agenttypes.CompilePrompt("t", tc.prompt)
			require.ErrorIs(t, err, agenttypes.ErrPromptTemplate)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestCompilePromptKeepsWhatPromptsUse(t *testing.T) {
	data := agenttypes.PromptData{Type: "review", Dir: "/repo", Tools: []string{"read", "grep"}}
	for prompt, want := range map[string]string{
		"plain text, no actions":                                    "plain text, no actions",
		"You work in {{.Dir}}.":                                     "You work in /repo.",
		"Tools: {{range .Tools}}{{.}} {{end}}":                      "Tools: read grep ",
		"{{range $i, $t := .Tools}}{{if $i}}, {{end}}{{$t}}{{end}}": "read, grep",
		`{{if eq .Type "review"}}Review.{{else}}Other.{{end}}`:      "Review.",
		"{{len .Tools}} tools; first {{index .Tools 0}}":            "2 tools; first read",
		"{{with .Dir}}in {{.}}{{end}}":                              "in /repo",
		"{{range .Tools}}{{range $.Tools}}.{{end}}{{end}}":          "....",
		"{{$t := .Tools}}{{range $t}}{{.}};{{end}}":                 "read;grep;",
		"{{with .Tools}}{{range .}}{{.}}/{{end}}{{end}}":            "read/grep/",
	} {
		p, err := agenttypes.CompilePrompt("t", prompt)
		require.NoError(t, err, prompt)
		got, err := p.Render(context.Background(), data)
		require.NoError(t, err, prompt)
		assert.Equal(t, want, got, prompt)
	}
}

func TestRenderStopsAtTheSizeCapAndTheContext(t *testing.T) {
	tools := make([]string, 40)
	for i := range tools {
		tools[i] = "tool"
	}
	p, err := agenttypes.CompilePrompt("t", "{{range .Tools}}{{range $.Tools}}"+strings.Repeat("x", 200)+"{{end}}{{end}}")
	require.NoError(t, err)
	_, err = p.Render(context.Background(), agenttypes.PromptData{Tools: tools})
	require.ErrorIs(t, err, agenttypes.ErrPromptTemplate)
	assert.Contains(t, err.Error(), "passes 262144 bytes")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Render(ctx, agenttypes.PromptData{Tools: tools})
	assert.ErrorIs(t, err, context.Canceled, "rendering honours the agent's context")
}

func TestRegisterTypeRefusesAnUnboundedPrompt(t *testing.T) {
	reg := agenttypes.NewRegistry()
	err := reg.RegisterType(agenttypes.Type{Name: "bomb", Description: "d", Prompt: `{{range 100000000}}x{{end}}`})
	require.ErrorIs(t, err, agenttypes.ErrInvalid)
	assert.ErrorIs(t, err, agenttypes.ErrPromptTemplate)
}
