// Package tui will hold ftctl's bubbletea console: a root model with stream, functions, probes
// and top views, built on filters/, probes/ and stream/. IO never runs inside Update.
//
// Not built yet: see the issue "ftctl tui".
package tui
