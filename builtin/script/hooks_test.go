package script_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/script"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// guarded vetoes reads of anything under secret/, and accepts an answer
// only when it names a file as path:line.
const guarded = `name: guarded
description: Reads, but not the secrets.
needs_language_model: true
tools: [read]
budget: {max_turns: 6}
script: |
  package hooks

  import (
  	"errors"
  	"regexp"
  	"strings"

  	"troupe"
  )

  func BeforeTool(call troupe.ToolCall) error {
  	if path, _ := call.Args["path"].(string); strings.HasPrefix(path, "secret/") {
  		return errors.New("files under secret/ are off limits")
  	}
  	return nil
  }

  var ref = regexp.MustCompile(` + "`" + `[\w./]+:\d+` + "`" + `)

  func Result(output string) (any, error) {
  	if m := ref.FindString(output); m != "" {
  		return map[string]any{"ref": m}, nil
  	}
  	return nil, errors.New("name the place as path:line")
  }
`

func lastToolText(msgs []llms.MessageContent) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, p := range msgs[i].Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				return r.Content
			}
		}
	}
	return ""
}

func lastHumanText(msgs []llms.MessageContent) string {
	m := msgs[len(msgs)-1]
	if m.Role != llms.ChatMessageTypeHuman {
		return ""
	}
	return scripted.Text(m)
}

// A BeforeTool veto reaches the model as the call's result, the tool is
// not run and the call costs no budget; a Result hook's error goes back
// to the model once, and its value becomes data.
func TestBeforeToolVetoesAndResultRetries(t *testing.T) {
	h := script.New(script.Options{})
	defer h.Close()
	var veto, retry string
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "read", Args: `{"path":"secret/key.txt"}`}}},
		scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			veto = lastToolText(msgs)
			return scripted.Step{Calls: []scripted.Call{{Name: "read", Args: `{"path":"main.go"}`}}}
		}},
		scripted.Step{Text: "It is in main."},
		scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			retry = lastHumanText(msgs)
			return scripted.Step{Text: "main.go:1 declares it."}
		}},
	)
	mgr := scriptedManager(t, h, model, map[string]string{"guarded": guarded})
	defer mgr.Close(context.Background())
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "secret"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret", "key.txt"), []byte("hunter2\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))

	res := run(t, mgr, "guarded", "where is main?", dir)
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Contains(t, veto, "files under secret/ are off limits", "the model sees the veto's reason")
	for _, r := range model.Requests() {
		for _, m := range r.Messages {
			assert.NotContains(t, scripted.Text(m), "hunter2", "a vetoed call is never run")
		}
	}
	assert.Equal(t, 1, res.ToolCalls, "a vetoed call costs no budget")
	assert.Contains(t, retry, "name the place as path:line", "the Result hook's error goes back to the model")
	assert.Equal(t, map[string]any{"ref": "main.go:1"}, res.Data)
}

// A Result hook that rejects the answer twice fails the run bad_output,
// keeping the last answer as partial output.
func TestResultHookRejectingTwiceIsBadOutput(t *testing.T) {
	h := script.New(script.Options{})
	defer h.Close()
	model := scripted.New(scripted.Step{Text: "somewhere"}, scripted.Step{Text: "still somewhere"})
	mgr := scriptedManager(t, h, model, map[string]string{"guarded": guarded})
	defer mgr.Close(context.Background())
	res := run(t, mgr, "guarded", "where is main?", t.TempDir())
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonBadOutput, res.Reason)
	assert.Contains(t, res.Error, "name the place as path:line")
	assert.Equal(t, "still somewhere", res.Output)
	assert.Len(t, model.Requests(), 2, "one retry, no more")
}

// Through the Go API, as through troupe types validate: a script that
// imports what it may not, or reaches for the file system by any route,
// is refused when its definition loads, with the definition's file and
// line; nothing of it runs.
func TestForbiddenScriptsAreRefusedAtLoadThroughTheGoAPI(t *testing.T) {
	h := script.New(script.Options{})
	defer h.Close()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	reg.SetScriptCompiler(h)
	dir := t.TempDir()
	marker := filepath.Join(dir, "written")
	cases := map[string]struct{ imp, body, want string }{
		"exec":    {`"os/exec"`, `exec.Command("touch", "` + marker + `").Run(); return "", nil`, `import "os/exec" is not allowed`},
		"unsafe":  {`"unsafe"`, `return string(rune(unsafe.Sizeof(task))), nil`, `import "unsafe" is not allowed`},
		"os":      {`"os"`, `return "", os.WriteFile("` + marker + `", nil, 0o644)`, `import "os" is not allowed`},
		"ioutil":  {`"io/ioutil"`, `return "", ioutil.WriteFile("` + marker + `", nil, 0o644)`, `import "io/ioutil" is not allowed`},
		"syscall": {`"syscall"`, `syscall.Exit(3); return "", nil`, `import "syscall" is not allowed`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src := "package hooks\n\nimport (\n\t" + c.imp + "\n\n\t\"troupe\"\n)\n\nfunc Prompt(task troupe.Task) (string, error) {\n\t" + c.body + "\n}\n"
			def := "name: bad-" + name + "\ndescription: forbidden\nneeds_language_model: true\nscript: |\n" + indentBlock(src) + "\n"
			path := filepath.Join(dir, name+".yaml")
			require.NoError(t, os.WriteFile(path, []byte(def), 0o644))
			_, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg, TrustScripts: agenttypes.TrustAll}, path)
			require.True(t, diags.HasErrors(), "a forbidden script loads")
			text := diags.String()
			assert.Contains(t, text, c.want)
			assert.Contains(t, text, path+":8:", "the error names the import's line in the definition")
			assert.Contains(t, text, "strings", "the error lists what is allowed")
			assert.NoFileExists(t, marker)
		})
	}
}
