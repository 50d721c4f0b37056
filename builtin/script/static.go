package script

import "github.com/troupe-dev/troupe/agenttypes"

// Check checks a definition's scripts without running any of their code:
// what a script may import and call, and that it defines what it must.
// Errors of types that only compiling finds are not reported.
func (h *Host) Check(typeName string, s *agenttypes.Scripts) agenttypes.Diagnostics {
	var diags agenttypes.Diagnostics
	if s.Hooks != nil {
		diags = append(diags, staticCheck(KindHooks, s.Hooks)...)
	}
	for _, st := range s.Tools {
		diags = append(diags, staticCheck(KindTool, &st.Script)...)
	}
	return diags
}

var _ agenttypes.ScriptChecker = (*Host)(nil)

// staticCheck is the check that runs nothing, its problems placed in the
// script's file.
func staticCheck(kind Kind, s *agenttypes.Script) agenttypes.Diagnostics {
	_, problems := check(s.Source, kind)
	var ds agenttypes.Diagnostics
	for _, pr := range problems {
		ds = append(ds, scriptDiag(s, pr.Line, pr.Col, pr.Msg))
	}
	return ds
}

func scriptDiag(s *agenttypes.Script, line, col int, msg string) agenttypes.Diagnostic {
	l, c := s.Pos(line, col)
	return agenttypes.Diagnostic{File: s.File, Line: l, Col: c, Severity: agenttypes.SeverityError, Message: msg}
}
