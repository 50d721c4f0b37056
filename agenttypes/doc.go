// Package agenttypes defines what an agent type is and what a tool is, and
// holds the Registry that maps names to both.
//
// A Type is a definition: a name, a system prompt, the tools an agent of
// that type may call, the model it prefers and its default Budget. A Tool is
// anything an agent can call by name with JSON arguments. The manager
// package runs agents; this package only describes them, so that the
// builtin set, definition files, scripts and plugins can all produce the
// same values.
//
// # Definition files
//
// Types can also be written as files: YAML (*.yaml, *.yml) or Markdown
// with YAML front matter (*.md, the body being the prompt), in troupe's
// schema or in Claude Code's agent format. ParseDefinition, LoadFile and
// LoadFiles read them; troupe's own files are read strictly (unknown
// fields are errors), Claude Code's leniently (what troupe cannot honour is
// a warning, and front matter that is not valid YAML is read line by
// line). Every problem is a Diagnostic that says where it is
// (FILE:LINE:COL) and what to write instead; Diagnostics.Err makes a
// *DefinitionError of them.
//
// Registry.Reload discovers the files of a project and of the user
// (Sources, Layers), resolves extends against the types registered before
// it, and swaps the result in at once; project files hide user files,
// which hide registered types. Types the registry hands out never change,
// so agents that are running keep their type across reloads.
//
// A type whose tools change things (write, edit, run, merge) gets a
// workspace of its own (Type.Workspace, Workspaces); its RunPolicy says
// which commands run may start, and Setup which prepare a new workspace.
// A project's .troupe/config.yaml may give the list of commands for the
// types that name none (RunConfig, ProjectRunPolicy, Sources.ProjectRun),
// once the user trusts the project: its commands are its code (GrantRun).
//
// See docs/agent-definitions.md for the schema, the Claude Code mapping
// and the discovery rules.
package agenttypes
