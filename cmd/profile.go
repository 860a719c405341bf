package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/profile"
)

// NewCmdProfile builds `ftctl profile validate|schema`.
func NewCmdProfile(g *Globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "profile",
		Short: "Check tracing profiles, and print their JSON Schema",
		Long: `A profile is a tracing setup declared in a file, YAML or JSON (apiVersion ftctl.dev/v1alpha1,
kind TracingProfile): the instance's settings, the functions traced, events with filters, probes,
synthetic events and triggers, under a name that owns them (its instance is ftctl-owned-NAME,
its probe group ftctl_owned_NAME; ${group} stands for that group in event names and triggers).
validate and schema work offline: they read no kernel file and need neither root nor tracefs.`,
		Args: args(cobra.NoArgs),
	}
	c.AddCommand(NewCmdProfileValidate(g, nil), NewCmdProfileSchema(g, nil))
	return c
}

// ProfileValidateOptions are the inputs of `ftctl profile validate`.
type ProfileValidateOptions struct {
	G    *Globals
	File string // -f: a path, or "-" for stdin
}

const profileValidateJSON = `One object, valid or not (exit 2 when not); errors in the file's order, line and
column 0 where unknown:

  {"file": "slow.yaml", "name": "slowopen", "valid": false,
   "errors": [{"line": 12, "column": 13, "path": "spec.instance.tracer",
     "reason": "\"functon\": a profile's tracer is function, function_graph or nop"}]}

A file that cannot be read is an error with no document: exit 2 when it does not exist, else 1.`

// NewCmdProfileValidate builds `ftctl profile validate`.
func NewCmdProfileValidate(g *Globals, runF func(context.Context, *ProfileValidateOptions) error) *cobra.Command {
	opts := &ProfileValidateOptions{G: g}
	c := &cobra.Command{
		Use:   "validate -f FILE",
		Short: "Check a profile offline: its syntax, fields and rules",
		Long: `Check a profile without a kernel: YAML or JSON read strictly (an unknown field, a value of the
wrong type, a key given twice or a second document is refused), then every rule: the version
and kind, the name (1 to 32 lower-case letters and digits), the features required, the
instance's settings, each function glob, each event's name and filter, each probe definition
(its grammar: the symbols are the kernel's to know), the synthetic events, the triggers, and
the references between them (${group}:EVENT names one of the profile's probes). Every error is
printed, one a line, as FILE:LINE:COLUMN: FIELD: REASON, the form editors jump to.

What only the running kernel knows (which functions a glob matches, an event's fields, its
features) is checked when the profile is applied. A file is at most 1 MiB; anchors and
aliases (&x, *x) are refused. Exit 2 when the profile is invalid.`,
		Example: `  ftctl profile validate -f slowopen.yaml
  ftctl profile validate -f slowopen.yaml -o json
  kubectl get cm tracing -o jsonpath='{.data.profile}' | ftctl profile validate -f -`,
		Args:        args(cobra.NoArgs),
		Annotations: map[string]string{AnnotationJSON: profileValidateJSON},
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, profileValidateRun, opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "the profile `FILE` (YAML or JSON); - reads stdin")
	registerFlagCompletion(c, "file", cobra.FixedCompletions([]cobra.Completion{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt))
	return c
}

// profileReport is what `profile validate -o json` prints.
type profileReport struct {
	File   string         `json:"file"`
	Name   string         `json:"name"`
	Valid  bool           `json:"valid"`
	Errors []profileError `json:"errors"`
}

type profileError struct {
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func profileValidateRun(_ context.Context, opts *ProfileValidateOptions) error {
	g := opts.G
	if opts.File == "" {
		return InvalidInput(fmt.Errorf("-f FILE is required: the profile's file, or - for stdin\nsee '%s --help'", "ftctl profile validate"))
	}
	name, p, err := readProfile(g, opts.File)
	var found []*profile.Error
	if err != nil {
		if found = profileErrors(err); found == nil { // a file that cannot be read
			if errors.Is(err, fs.ErrNotExist) {
				return InvalidInput(fmt.Errorf("reading the profile: %w", err))
			}
			return fmt.Errorf("reading the profile: %w", err)
		}
	}
	report := profileReport{File: name, Valid: err == nil, Errors: []profileError{}}
	if p != nil {
		report.Name = p.Metadata.Name
	}
	for _, e := range found {
		report.Errors = append(report.Errors, profileError{Line: e.Line, Column: e.Column, Path: e.Path, Reason: e.Reason})
	}
	if ok, werr := g.printDoc(validateFormat, report); ok {
		if werr != nil {
			return werr
		}
	} else if err == nil {
		fmt.Fprintf(g.Out, "%s: valid profile %s (%s)\n", safe(name), safe(p.Metadata.Name), p.Summary())
	} else {
		for _, e := range found {
			fmt.Fprintln(g.Err, lineSafe(e.Error()))
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w (%s)", safe(name), profile.ErrInvalid, plural(len(found), "error"))
	}
	return nil
}

// readProfile reads the profile of -f FILE ("-": stdin, named <stdin>), and validates it.
func readProfile(g *Globals, file string) (name string, p *profile.Profile, err error) {
	name = file
	if file == "-" {
		name = "<stdin>"
		var data []byte
		if data, err = profile.ReadBounded(g.In, name); err == nil {
			p, err = profile.Load(name, data)
		}
	} else {
		p, err = profile.LoadFile(file)
	}
	if err == nil {
		err = p.Validate()
	}
	return name, p, err
}

// profileErrors are the *profile.Error in err (one, or joined), nil when err holds none.
func profileErrors(err error) []*profile.Error {
	var out []*profile.Error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, profileErrors(e)...)
		}
		return out
	}
	var e *profile.Error
	if errors.As(err, &e) {
		return []*profile.Error{e}
	}
	return nil
}

// lineSafe escapes the control characters and invalid UTF-8 of a line from someone's file,
// keeping its quotes and printable characters, so that FILE:LINE:COLUMN stays at its start.
func lineSafe(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[0])
		case unicode.IsControl(r):
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
		default:
			b.WriteRune(r)
		}
		s = s[size:]
	}
	return b.String()
}

// ProfileSchemaOptions are the inputs of `ftctl profile schema`.
type ProfileSchemaOptions struct {
	G *Globals
}

// NewCmdProfileSchema builds `ftctl profile schema`.
func NewCmdProfileSchema(g *Globals, runF func(context.Context, *ProfileSchemaOptions) error) *cobra.Command {
	opts := &ProfileSchemaOptions{G: g}
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of profiles",
		Long: `Print the JSON Schema (draft 2020-12) of a profile, for an editor's completion and checks
(yaml-language-server, VS Code) or a CI step: the fields with their descriptions, no field
but those, and the values each takes. The rules between fields, and the grammars of filters
and probe definitions, are 'ftctl profile validate''s alone: a file the schema takes may
still be refused.`,
		Example: `  ftctl profile schema > tracingprofile.schema.json
  # in a profile, for yaml-language-server:
  # yaml-language-server: $schema=tracingprofile.schema.json`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, profileSchemaRun, opts)
		},
	}
}

func profileSchemaRun(_ context.Context, opts *ProfileSchemaOptions) error {
	s, err := profile.Schema()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(opts.G.Out, "%s\n", s)
	return err
}
