// Package trust keeps the user's consent to run what a project names.
//
// A project directory is untrusted input: a repository just cloned may
// ship plugins, scripted agent definitions, commands for its agents to
// run (its tests are its code) and config that points a provider, with
// the user's key, at a server of its choosing. None of it runs, and no
// key goes where it says, until the user has trusted the project. Consent
// lives outside the project, in the user's state directory, keyed by the
// project's path and pinned to the content of each thing trusted: a
// changed plugin binary, script, list of commands or endpoint is not
// trusted until the user says so again. A lock file in the repository
// pins versions; it is never consent.
package trust
