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

// Resolved is a list of changes whose patterns were resolved against one read of the index:
// the slow part of a change (reading and parsing available_filter_functions, matching the
// patterns), which needs no lock. Applier.ApplyResolved checks it again under the lock.
type Resolved struct {
	ix      *Index
	changes []Change
	recs    [][]int // per change: the records its patterns select (nil for a clear)
}

// Resolve resolves every pattern of every change against ix, before anything is written: a
// pattern that selects nothing, in any step, fails the whole (ErrPattern, a NoMatchError).
func Resolve(ix *Index, changes []Change) (*Resolved, error) {
	r := &Resolved{ix: ix, changes: changes, recs: make([][]int, len(changes))}
	for k, ch := range changes {
		recs, err := ch.resolve(ix)
		if err != nil {
			return nil, err
		}
		r.recs[k] = recs
	}
	return r, nil
}

// Applier carries changes out on a trace array with the swap protocol (see docs/design.md, "The swap
// protocol"): resolve every pattern and plan every step first; write each list in one open
// without O_TRUNC, additions then removals; read back and verify; on a mismatch retry once from
// fresh indexes, else restore what was there and fail. The caller holds the tracefs lock.
type Applier struct {
	In  *tracefs.Instance // the trace array whose lists change
	Top *tracefs.Instance // where available_filter_functions is
	// ByName writes names instead of indexes (kernels without index writes, before 5.1).
	ByName bool
	// Notice reports progress and recoveries to the user (stderr).
	Notice func(format string, args ...any)
	// Timing, when set, receives how long each phase took ("read index", "resolve", "read
	// list", "plan", "write", "verify"): FTCTL_TIMING=1 prints them, for benchmarks.
	Timing func(phase string, d time.Duration)
	// AfterPlan, when set (a test hook), runs after a step is planned and before the check that
	// the loaded modules are still those the index was read with.
	AfterPlan func(attempt int)
	// BeforeWrite, when set (a test hook), runs after planning and before each write: the window in
	// which a module load or unload makes the planned indexes stale.
	BeforeWrite func(attempt int)

	dryRun bool
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

// Current reads a list file as a multiset.
func (a *Applier) Current(file string) (Multiset, tracefs.FunctionList, error) {
	b, err := a.In.ReadFile(file)
	if err != nil {
		return nil, tracefs.FunctionList{}, err
	}
	l := tracefs.ParseFunctionList(string(b))
	return ListedSet(l), l, nil
}

// loadIndex reads the index afresh.
func (a *Applier) loadIndex() (ix *Index, err error) {
	err = a.timed("read index", func() (err error) { ix, err = LoadIndex(a.Top); return })
	return ix, err
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

// Apply reads the index, resolves the changes and carries them out (ApplyResolved), all under
// the caller's lock. A command that can read the index before taking the lock uses LoadIndex,
// Resolve and ApplyResolved instead, and holds the lock only for the last.
func (a *Applier) Apply(ctx context.Context, changes []Change) ([]Result, error) {
	ix, err := a.loadIndex()
	if err != nil {
		return nil, err
	}
	var r *Resolved
	if err := a.timed("resolve", func() (err error) { r, err = Resolve(ix, changes); return }); err != nil {
		return nil, err
	}
	return a.ApplyResolved(ctx, r)
}

// ApplyResolved carries resolved changes out in order. The caller holds the tracefs lock, and
// everything the resolution assumed is checked again under it before the first write: if the
// loaded modules changed since the index was read, it is read again and the patterns resolved
// again; every step is planned on the lists as they are now (another writer may have changed
// them since the resolution), each on the lists the earlier ones leave. A step that cannot be
// planned (a pattern now selecting nothing, a filter that would become empty) fails before
// anything is written. If a step fails later, its own list is put back, then the lists of the
// earlier steps, last first, and the error returned.
func (a *Applier) ApplyResolved(ctx context.Context, r *Resolved) ([]Result, error) {
	a.dryRun = a.In.FS().DryRun != nil
	if r.ix.Stale() {
		a.notice("the loaded modules changed since the function index was read: reading it again")
		ix, err := a.loadIndex()
		if err != nil {
			return nil, err
		}
		if err := a.timed("resolve", func() (err error) { r, err = Resolve(ix, r.changes); return }); err != nil {
			return nil, err
		}
	}
	steps, err := a.planAll(r)
	if err != nil {
		return nil, err
	}
	var results []Result
	if a.dryRun {
		for _, st := range steps {
			if err := a.write(ctx, r.ix, st); err != nil {
				return results, err
			}
			results = append(results, a.result(st, false, false))
		}
		return results, nil
	}
	var done []Step
	for k := range r.changes {
		res, st, err := a.applyOne(ctx, r, k, steps[k])
		if err != nil {
			// Put back what earlier steps changed, even when interrupted (Ctrl-C).
			cleanup := context.WithoutCancel(ctx)
			for j := len(done) - 1; j >= 0; j-- {
				if rerr := a.restore(cleanup, done[j].File, done[j].Before); rerr != nil {
					err = andRestoreFailed(err, "restoring "+done[j].File, rerr)
				}
			}
			return results, err
		}
		results = append(results, res)
		done = append(done, st)
	}
	return results, nil
}

// planAll plans every step from the lists as they are (each read once) and as the earlier
// steps leave them.
func (a *Applier) planAll(r *Resolved) ([]Step, error) {
	lists := map[string]Multiset{}
	steps := make([]Step, len(r.changes))
	for k, ch := range r.changes {
		before, ok := lists[ch.File]
		if !ok {
			if err := a.timed("read list", func() (err error) { before, _, err = a.Current(ch.File); return }); err != nil {
				return nil, err
			}
		}
		if err := a.timed("plan", func() (err error) { steps[k], err = planResolved(r.ix, before, ch, r.recs[k]); return }); err != nil {
			return nil, err
		}
		lists[ch.File] = steps[k].Expect
	}
	return steps, nil
}

// applyOne writes one planned step and verifies it; on a mismatch it retries once from a fresh
// index. Whatever an attempt wrote is taken back (the list restored as it was before the step)
// when the step fails.
func (a *Applier) applyOne(ctx context.Context, r *Resolved, k int, st Step) (Result, Step, error) {
	ch := r.changes[k]
	ix := r.ix
	orig := st.Before // the list before the first attempt: what a failure restores
	wrote := false    // an attempt opened the list for writing: the close committed something
	fail := func(err error) (Result, Step, error) {
		if !wrote {
			return Result{}, st, fmt.Errorf("%w; nothing was written to %s", err, ch.File)
		}
		a.notice("%s: restoring the previous list", ch.File)
		if rerr := a.restore(context.WithoutCancel(ctx), ch.File, orig); rerr != nil {
			return Result{}, st, andRestoreFailed(err, "restoring the previous "+ch.File, rerr)
		}
		return Result{}, st, fmt.Errorf("%w (the previous list was restored)", err)
	}
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		planned := st
		if attempt > 0 {
			a.notice("%s: %v; retrying once with fresh indexes", ch.File, last)
			var err error
			if ix, err = a.loadIndex(); err != nil {
				return fail(err)
			}
			var recs []int
			if err := a.timed("resolve", func() (err error) { recs, err = ch.resolve(ix); return }); err != nil {
				return fail(fmt.Errorf("%s: after %v: %w", ch.File, last, err))
			}
			var before Multiset
			if err := a.timed("read list", func() (err error) { before, _, err = a.Current(ch.File); return }); err != nil {
				return fail(err)
			}
			// The target is computed from the list as it was before the first attempt: a failed
			// attempt may have left wrong functions behind (stale indexes), which the retry must
			// take out again, whatever the operation.
			if err := a.timed("plan", func() (err error) { st, err = planResolved(ix, orig, ch, recs); return }); err != nil {
				return fail(fmt.Errorf("%s: after %v: %w", ch.File, last, err))
			}
			planned = st
			if !before.Equal(orig) {
				var err error
				if planned, err = PlanRestore(ix, before, st.Expect, ch.File); err != nil {
					return fail(err)
				}
			}
		}
		if a.AfterPlan != nil {
			a.AfterPlan(attempt)
		}
		// A module unloaded since the index was read shifts indexes: re-read and re-plan rather
		// than write stale ones (what remains is the few milliseconds of the write itself, which
		// the read-back covers).
		if ix.Stale() {
			last = errors.New("the loaded modules changed while planning")
			if attempt == 0 {
				continue
			}
			return fail(fmt.Errorf("%s: %w twice", ch.File, last))
		}
		if a.BeforeWrite != nil {
			a.BeforeWrite(attempt)
		}
		err := a.timed("write", func() error { return a.write(ctx, ix, planned) })
		if !opened(err) {
			return fail(err)
		}
		wrote = true
		if err != nil {
			if ctx.Err() != nil { // interrupted midway: the list is within old ∪ new; put it back
				return fail(ctx.Err())
			}
			var te *tracefs.TokenError
			if !errors.As(err, &te) { // not a stale index: nothing to retry
				return fail(err)
			}
			last = fmt.Errorf("the kernel rejected a planned index (%w)", err)
		} else {
			var got Multiset
			if err := a.timed("verify", func() (err error) { got, _, err = a.Current(ch.File); return }); err != nil {
				return fail(err)
			}
			if got.Equal(st.Expect) {
				return a.result(st, true, attempt > 0), st, nil
			}
			last = fmt.Errorf("%w: %s", ErrVerify, st.Expect.Diff(got))
		}
		if attempt == 1 {
			a.notice("%s: still not matching after a retry", ch.File)
			if !errors.Is(last, ErrVerify) {
				last = fmt.Errorf("%w: %v", ErrVerify, last)
			}
			return fail(fmt.Errorf("%s: %w", ch.File, last))
		}
	}
	panic("unreachable")
}

// andRestoreFailed is err, and the restore that followed it failed too (both in the chain).
// The list may now differ from before, so a refusal (ErrPattern, ErrWouldEmpty: "nothing was
// changed") does not stay in it.
func andRestoreFailed(err error, what string, rerr error) error {
	if errors.Is(err, ErrPattern) || errors.Is(err, ErrWouldEmpty) {
		return fmt.Errorf("%v; %s failed too: %w", err, what, rerr)
	}
	return fmt.Errorf("%w; %s failed too: %w", err, what, rerr)
}

// opened reports whether a write that returned err got as far as opening the file (and so
// committed something when it closed it). Only a failed open leaves the list untouched.
func opened(err error) bool {
	var te *tracefs.Error
	return err == nil || !errors.As(err, &te) || te.Op != "open"
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

// restore puts a list back to a recorded multiset, with fresh indexes. Functions that no longer
// exist are left out (and said so); a filter none of whose functions exists is left as it is
// (VanishedError), never emptied.
func (a *Applier) restore(ctx context.Context, file string, want Multiset) error {
	ix, err := a.loadIndex()
	if err != nil {
		return err
	}
	cur, _, err := a.Current(file)
	if err != nil {
		return err
	}
	st, err := PlanRestore(ix, cur, want, file)
	if err != nil {
		return err
	}
	if len(st.Vanished) > 0 {
		a.notice("%s: %d function(s) of the previous list no longer exist and cannot be put back: %v", file, len(st.Vanished), st.Vanished)
	}
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

// Restore puts the list file back to want (a multiset read earlier with Current), with fresh
// indexes, and verifies it: how a transaction of several writes (a profile's apply) undoes
// its list change when a later write fails. Functions gone since are left out and said so; a
// filter none of whose functions exists is left as it is (VanishedError), never emptied. The
// caller holds the tracefs lock.
func (a *Applier) Restore(ctx context.Context, file string, want Multiset) error {
	a.dryRun = a.In.FS().DryRun != nil
	return a.restore(ctx, file, want)
}
