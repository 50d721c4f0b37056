package agenttypes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// runConfigName is the Grant.Type of a project config's run section.
const runConfigName = "run.allow"

// A RunConfig is the run section of a project's .troupe/config.yaml:
//
//	run:
//	  allow: ["go test", "make"]   # the project's build and test commands
//	  timeout: 5m                  # optional
//	  network: false               # optional
//
// Once the user trusts the project, its list replaces the builtin general
// type's, and is the list of every definition that lists run (or Claude
// Code's Bash) and names none of its own.
type RunConfig struct {
	// File is the config file; Line the line of its run: key.
	File string
	Line int
	// Policy is what the section says; its Allow is never nil.
	Policy RunPolicy
}

// Grant is what trusting the section allows, for a trust check:
// GrantRun, with the config file and a digest of its commands.
func (c *RunConfig) Grant() Grant {
	return Grant{Kind: GrantRun, Type: runConfigName, File: c.File,
		Digest: commandsDigest(c.Policy.Allow, nil, c.Policy.Network), Detail: commandsDetail(c.Policy.Allow, nil, c.Policy.Network)}
}

// ReadRunConfig reads the run section of the config file of the project
// at root (FindProjectRoot): root/.troupe/config.yaml. It returns nil,
// and no error, when the file or its run section is absent. The rest of
// the file is not checked here. A section that does not follow the
// schema is an error whose lines read FILE:LINE:COL: message.
func ReadRunConfig(root string) (c *RunConfig, err error) {
	path := filepath.Join(root, ".troupe", "config.yaml")
	data, err := readConfigFile(path)
	if data == nil || err != nil {
		return nil, err
	}
	sink := &diagSink{file: path}
	if recoverPanics {
		defer func() {
			if r := recover(); r != nil {
				c, err = nil, fmt.Errorf("%w: %s: cannot read this file (the YAML parser failed: %v)", ErrInvalid, path, r)
			}
		}()
	}
	c = parseRunConfig(sink, path, data)
	if err := sink.diags.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

func parseRunConfig(sink *diagSink, path string, data []byte) *RunConfig {
	text, ok := readText(sink, data)
	if !ok {
		return nil
	}
	root, err := parseYAML(text)
	if err != nil {
		sink.errorf(yamlErrorLine(err), 1, "not valid YAML: %s", yamlErrorText(err))
		return nil
	}
	if root, ok = checkShape(sink, root, 0); !ok {
		return nil
	}
	var k, v *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "run" {
			k, v = root.Content[i], deref(root.Content[i+1])
		}
	}
	if k == nil {
		return nil
	}
	d := &definition{path: path, strict: true, given: map[string]pos{}}
	dc := &decoder{sink: sink, def: d, lines: strings.Split(text, "\n")}
	dc.run(v)
	if !d.has("run.allow") && !sink.diags.HasErrors() {
		dc.errorf(k, "run: here names the commands the project's agents may run; give them, as in %s", topFields["run"])
	}
	return &RunConfig{File: path, Line: k.Line, Policy: d.run}
}

// ProjectRunPolicy is the run policy the config of the project at root
// gives (ReadRunConfig), when trust allows its Grant: what replaces the
// general type's allow-list, and Sources.ProjectRun. It is nil when the
// project gives none, or trust (nil trusts nothing) refuses it.
func ProjectRunPolicy(root string, trust func(Grant) bool) (*RunPolicy, error) {
	c, err := ReadRunConfig(root)
	if err != nil || c == nil || trust == nil || !trust(c.Grant()) {
		return nil, err
	}
	p := c.Policy
	p.Allow = slices.Clone(p.Allow)
	return &p, nil
}

// readConfigFile reads a project's config file: a regular file of at most
// MaxDefinitionSize. A missing file gives nil and no error.
func readConfigFile(path string) ([]byte, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, path, fmt.Sprintf(format, args...))
	}
	f, info, err := fsroot.OpenRegular(nil, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, fsroot.ErrNotRegular):
		return nil, fail("is a %s, not a regular file; a config file is a YAML file", fsroot.Kind(info.Mode()))
	case err != nil:
		return nil, fail("cannot read it: %v", unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDefinitionSize+1))
	switch {
	case err != nil:
		return nil, fail("cannot read it: %v", unwrapPath(err))
	case len(data) > MaxDefinitionSize:
		return nil, fail("is over %s; config files are limited to that: is this the right file?", sizeString(MaxDefinitionSize))
	}
	return data, nil
}
