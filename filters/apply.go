package filters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ftctl/ftctl/tracefs"
)

// ErrVerify: what the kernel lists after a write is not what was planned, even after a retry
// from fresh indexes (the previous contents were restored).
var ErrVerify = errors.New("the kernel's list does not match the plan")

// Applier carries changes out on a trace array with the swap protocol (see README, "The swap
// protocol"): resolve every pattern first; write each list in one open without O_TRUNC,
// additions then removals; read back and verify; on a mismatch retry once from fresh indexes,
// else restore what was there and fail. The caller holds the tracefs lock.
type Applier struct {
	In  *tracefs.Instance // the trace array whose lists change
	Top *tracefs.Instance // where available_filter_functions is
	// ByName writes names instead of indexes (kernels without index writes, before 5.1).
	ByName bool
	// Notice reports progress and recoveries to the user (stderr).
	Notice func(format string, args ...any)
	// Timing, when set, receives how long each phase took ("read index", "read list", "plan",
	// "write", "verify"): FTCTL_TIMING=1 prints them, for benchmarks.
	Timing func(phase string, d time.Duration)
	// AfterPlan, when set (a test hook), runs after planning and before the check that the
	// loaded modules are still those the index was read with.
	AfterPlan func(attempt int)
	// BeforeWrite, when set (a test hook), runs after planning and before each write: the window in
	// which a module load or unload makes the planned indexes stale.
	BeforeWrite func(attempt int)

	ix      *Index
	modules string // tracefs.ModulesFingerprint() when ix was read
	dryRun  bool
	planned map[string]Multiset // dry run: each list as the earlier steps would leave it
}

// Result reports one list's transition.
type Result struct {
	File     string `json:"file"`
	Instance string `json:"instance"`
	Op       string `json:"op"`
	Before   int    `json:"before"`   // function records listed before
	After    int    `json:"after"`    // and after (planned, in a dry run)
	Added    int    `json:"added"`    // records that were not listed before
	Removed  int    `json:"removed"`  // records listed before and not after
	Verified bool   `json:"verified"` // read back and equal to the plan (false in a dry run)
	Retried  bool   `json:"retried"`  // indexes went stale once (a module came or went)
	Empty    bool   `json:"empty"`    // the list is empty (for a filter: every function traced)
}

// Index returns the function index, reading available_filter_functions the first time (and
// again after Refresh).
func (a *Applier) Index() (*Index, error) {
	if a.ix != nil {
		return a.ix, nil
	}
	modules := tracefs.ModulesFingerprint()
	b, err := a.Top.ReadFile("available_filter_functions")
	if err != nil {
		return nil, err
	}
	a.modules = modules
	ix, err := ParseIndex(string(b))
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", a.Top.Path("available_filter_functions"), err)
	}
	a.ix = ix
	return ix, nil
}

// Refresh forgets the index: the next use reads it again.
func (a *Applier) Refresh() { a.ix = nil }

// Current reads a list file as a multiset (in a dry run, as the planned earlier steps left it).
func (a *Applier) Current(file string) (Multiset, tracefs.FunctionList, error) {
	b, err := a.In.ReadFile(file)
	if err != nil {
		return nil, tracefs.FunctionList{}, err
	}
	l := tracefs.ParseFunctionList(string(b))
	if m, ok := a.planned[file]; ok {
		return m, l, nil
	}
	return ListedSet(l), l, nil
}

// timed runs f and reports its duration as phase.
func (a *Applier) timed(phase string, f func() error) error {
	start := time.Now()
	err := f()
	if a.Timing != nil {
		a.Timing(phase, time.Since(start))
	}
	return err
}

func (a *Applier) notice(format string, args ...any) {
	if a.Notice != nil {
		a.Notice(format, args...)
	}
}

// Apply carries out changes in order. If one fails, the lists changed by the earlier ones are
// put back, last first, and the error returned.
func (a *Applier) Apply(ctx context.Context, changes []Change) ([]Result, error) {
	a.dryRun = a.In.FS().DryRun != nil
	a.planned = map[string]Multiset{}
	var results []Result
	var done []Step
	for _, ch := range changes {
		res, st, err := a.applyOne(ctx, ch)
		if err != nil {
			if !a.dryRun && len(done) > 0 && !errors.Is(err, ErrPattern) && !errors.Is(err, ErrWouldEmpty) {
				// Put back what earlier steps changed, even when interrupted (Ctrl-C).
				cleanup := context.WithoutCancel(ctx)
				for k := len(done) - 1; k >= 0; k-- {
					if rerr := a.restore(cleanup, done[k].File, done[k].Before); rerr != nil {
						err = fmt.Errorf("%w; restoring %s also failed: %v", err, done[k].File, rerr)
					}
				}
			}
			return results, err
		}
		results = append(results, res)
		done = append(done, st)
	}
	return results, nil
}

func (a *Applier) applyOne(ctx context.Context, ch Change) (Result, Step, error) {
	var last error
	var orig Multiset // the list before the first attempt: what a failure restores
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			a.Refresh()
			a.notice("%s: %v; retrying once with fresh indexes", ch.File, last)
		}
		var ix *Index
		var before Multiset
		if err := a.timed("read index", func() (err error) { ix, err = a.Index(); return }); err != nil {
			return Result{}, Step{}, err
		}
		if err := a.timed("read list", func() (err error) { before, _, err = a.Current(ch.File); return }); err != nil {
			return Result{}, Step{}, err
		}
		if attempt == 0 {
			orig = before
		}
		// The target is always computed from the list as it was before the first attempt: a
		// failed attempt may have left wrong functions behind (stale indexes), which the retry
		// must take out again, whatever the operation.
		var st Step
		if err := a.timed("plan", func() (err error) { st, err = PlanStep(ix, orig, ch); return }); err != nil {
			return Result{}, st, err
		}
		planned := st
		if attempt > 0 && !before.Equal(orig) {
			planned = PlanRestore(ix, before, st.Expect, ch.File)
		}
		if a.AfterPlan != nil {
			a.AfterPlan(attempt)
		}
		// A module unloaded since the index was read shifts indexes: re-read and re-plan rather
		// than write stale ones (what remains is the few milliseconds of the write itself, which
		// the read-back covers).
		if !a.dryRun && tracefs.ModulesFingerprint() != a.modules {
			last = errors.New("the loaded modules changed while planning")
			if attempt == 0 {
				continue
			}
			return Result{}, st, fmt.Errorf("%s: %w twice; nothing was written", ch.File, last)
		}
		if a.BeforeWrite != nil {
			a.BeforeWrite(attempt)
		}
		if err := a.timed("write", func() error { return a.write(ctx, ix, planned) }); err != nil {
			if ctx.Err() != nil { // interrupted midway: the list is within old ∪ new; put it back
				if rerr := a.restore(context.WithoutCancel(ctx), ch.File, orig); rerr != nil {
					return Result{}, st, fmt.Errorf("%w; restoring %s failed: %v", ctx.Err(), ch.File, rerr)
				}
				return Result{}, st, ctx.Err()
			}
			var te *tracefs.TokenError
			if !errors.As(err, &te) { // not a stale index: nothing to retry
				return Result{}, st, err
			}
			last = fmt.Errorf("the kernel rejected a planned index (%w)", err)
		} else if a.dryRun {
			a.planned[ch.File] = st.Expect
			return a.result(st, false, attempt > 0), st, nil
		} else {
			var got Multiset
			if err := a.timed("verify", func() (err error) { got, _, err = a.Current(ch.File); return }); err != nil {
				return Result{}, st, err
			}
			if got.Equal(st.Expect) {
				return a.result(st, true, attempt > 0), st, nil
			}
			last = fmt.Errorf("%w: %s", ErrVerify, st.Expect.Diff(got))
		}
		if attempt == 1 {
			a.notice("%s: still not matching after a retry; restoring the previous list", ch.File)
			if rerr := a.restore(ctx, ch.File, orig); rerr != nil {
				return Result{}, st, fmt.Errorf("%s: %w; restoring the previous list failed too: %v", ch.File, last, rerr)
			}
			if !errors.Is(last, ErrVerify) {
				last = fmt.Errorf("%w: %v", ErrVerify, last)
			}
			return Result{}, st, fmt.Errorf("%s: %w (the previous list was restored)", ch.File, last)
		}
	}
	panic("unreachable")
}

// write performs one step: one open, additions then removals, one close.
func (a *Applier) write(ctx context.Context, ix *Index, st Step) error {
	if st.Truncate {
		return a.In.Truncate(st.File)
	}
	var toks []tracefs.Token
	if a.ByName {
		toks = st.NameTokens(ix)
	} else {
		toks = st.IndexTokens(ix)
	}
	if len(toks) == 0 {
		return nil
	}
	return a.In.WriteTokens(ctx, st.File, toks)
}

// restore puts a list back to a recorded multiset, with fresh indexes.
func (a *Applier) restore(ctx context.Context, file string, want Multiset) error {
	a.Refresh()
	ix, err := a.Index()
	if err != nil {
		return err
	}
	cur, _, err := a.Current(file)
	if err != nil {
		return err
	}
	st := PlanRestore(ix, cur, want, file)
	if err := a.write(ctx, ix, st); err != nil {
		return err
	}
	got, _, err := a.Current(file)
	if err != nil {
		return err
	}
	if !got.Equal(st.Expect) {
		return fmt.Errorf("after restoring, %s", st.Expect.Diff(got))
	}
	return nil
}

func (a *Applier) result(st Step, verified, retried bool) Result {
	r := Result{File: st.File, Instance: a.In.Name, Op: st.Op.String(), Before: st.Before.Total(),
		After: st.Expect.Total(), Verified: verified, Retried: retried, Empty: len(st.Expect) == 0}
	for k, c := range st.Expect {
		if d := c - st.Before[k]; d > 0 {
			r.Added += d
		}
	}
	for k, c := range st.Before {
		if d := c - st.Expect[k]; d > 0 {
			r.Removed += d
		}
	}
	return r
}
