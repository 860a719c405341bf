package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"

	"github.com/ftctl/ftctl/agent"
	"github.com/ftctl/ftctl/flight"
)

// AgentOptions are the inputs of `ftctl agent`.
type AgentOptions struct {
	G         *Globals
	File      string
	Listen    string
	WebConfig string
	NoRepair  bool
	Interval  time.Duration
	MaxSeries int
}

// DefaultAgentListen is where the agent serves unless told: the loopback only.
const DefaultAgentListen = "127.0.0.1:9469"

// NewCmdAgent builds `ftctl agent`.
func NewCmdAgent(g *Globals, runF func(context.Context, *AgentOptions) error) *cobra.Command {
	opts := &AgentOptions{G: g}
	c := &cobra.Command{
		Use:   "agent -f PROFILE [--listen ADDR] [--no-repair] [--interval D]",
		Short: "Keep a profile applied on this host and serve its metrics to Prometheus",
		Long: `Apply the profile (as 'ftctl apply -f' does), then keep it applied: the kernel is checked
against it every --interval, when the file changes and on SIGHUP. Drift (a hand change, another
tool, a deleted instance) is repaired and counted, or only counted with --no-repair. A new
profile file is applied transactionally (on failure the state before it is restored); a file
that cannot be read or is invalid is counted as a failure and the setup in force is kept.

The agent serves, on --listen (the loopback by default; another address only when given):
  /metrics  Prometheus and OpenMetrics text: the agent's applies, repairs, drifts and failures;
            whether the profile is in sync; each CPU's ring (entries, bytes, overruns, drops);
            each hist trigger of the profile as a histogram (a .log2 or .buckets key: the
            kernel's buckets as le) or as counters per key, at most --max-series series per
            trigger (the rest folded into one labelled _other_, and counted);
  /healthz  the process answers;
  /readyz   the profile is applied and the last check could read the kernel (else 503, why).
Nothing served changes the kernel. TLS and basic auth come from --web-config, the Prometheus
exporter toolkit's web configuration file.

When the profile has a spec.flight section (docs/profiles.md), the agent runs its flight
recorder: the profile's instance is started as the recorder (as 'ftctl flight start -f'), or
adopted when it runs, and the section's triggers are armed as 'ftctl flight arm -f' arms them:
each rate-limited, each dump written into spec.flight.dir and rotated; SIGUSR1 dumps too. A new
profile's triggers are armed before it is applied: if either fails, the old profile and its
triggers stay. /metrics then also holds the triggers fired, the dumps made and failed, and the
ring's fill.

The profile stays applied when the agent stops (it is a declared owner, as after 'ftctl
apply'), and so does its flight recorder, which goes on recording (its triggers are disarmed):
a restarted agent finds it in sync and writes nothing; 'ftctl delete -f' removes a profile,
'ftctl flight stop NAME' a recorder. SIGINT and SIGTERM stop the agent. Under systemd
(NOTIFY_SOCKET, Type=notify) it says READY=1 once applied, armed and serving, RELOADING=1 and
READY=1 around a reload, STOPPING=1 when it stops.`,
		Example: `  sudo ftctl agent -f /etc/ftctl/slowreads.yaml
  sudo ftctl agent -f slowreads.yaml --listen 127.0.0.1:9469 --interval 10s --no-repair
  curl -s 127.0.0.1:9469/metrics | grep ftctl_agent_profile_in_sync`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			return runCmd(c, runF, agentRun, opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.File, "file", "f", "", "the profile `FILE` (YAML or JSON)")
	f.StringVar(&opts.Listen, "listen", DefaultAgentListen, "serve /metrics, /healthz and /readyz on `ADDR` (host:port)")
	f.StringVar(&opts.WebConfig, "web-config", "", "TLS and basic auth from `FILE` (the Prometheus exporter toolkit's web config)")
	f.BoolVar(&opts.NoRepair, "no-repair", false, "report drift (in the metrics and on stderr) without repairing it")
	f.DurationVar(&opts.Interval, "interval", 30*time.Second, "check the kernel against the profile every `D`")
	f.IntVar(&opts.MaxSeries, "max-series", agent.DefaultMaxSeries, "export at most `N` series per hist trigger, the rest folded")
	return c
}

func agentRun(ctx context.Context, opts *AgentOptions) error {
	g := opts.G
	if err := checkAgentOptions(opts); err != nil {
		return err
	}
	if _, err := loadProfile(g, opts.File); err != nil {
		return err // a profile that cannot be held is refused before anything is served
	}
	fs, err := g.FS()
	if err != nil {
		return err
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	sig := make(chan struct{}, 1)
	fctx, stopForward := context.WithCancel(ctx)
	defer stopForward()
	go forwardSignal(fctx, usr1, sig)
	a := agent.New(fs, agent.Options{File: opts.File, Repair: !opts.NoRepair, Interval: opts.Interval,
		LockTimeout: g.LockTimeout, MaxSeries: opts.MaxSeries, Notice: g.Notice, Owners: fileOwners(), Signal: sig,
		OnReload: func(done bool) {
			sdNotify(g, map[bool]string{false: daemon.SdNotifyReloading, true: daemon.SdNotifyReady}[done])
		}})
	defer a.Close() // the flight triggers disarmed; the recorder and the profile stay
	if g.DryRun {
		_, err := a.Start(ctx) // the first apply's writes, printed; nothing is served
		return err
	}
	l, err := agent.Listen(opts.Listen, opts.WebConfig)
	if err != nil {
		return InvalidInput(err)
	}
	defer l.Close()
	res, err := a.Start(ctx)
	if errors.Is(err, flight.ErrTrigger) {
		return InvalidInput(err)
	}
	if err != nil {
		return err
	}
	defer sdNotify(g, daemon.SdNotifyStopping)
	return agentLoop(ctx, opts, a, l, func() {
		g.Notice("agent: profile %s %s (instance %s); serving on %s", res.Profile, appliedWord(res.Action), res.Instance, l.Addr())
		sdNotify(g, daemon.SdNotifyReady)
	})
}

// forwardSignal turns each signal of in into a send on out (dropped while one waits), until
// ctx ends.
func forwardSignal(ctx context.Context, in <-chan os.Signal, out chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}
}

func checkAgentOptions(opts *AgentOptions) error {
	switch {
	case opts.File == "" || opts.File == "-":
		return InvalidInput(errors.New("-f PROFILE is required: a file (the agent reads it again when it changes)"))
	case opts.Interval < time.Second:
		return InvalidInput(fmt.Errorf("--interval %v: at least 1s", opts.Interval))
	case opts.MaxSeries < 1:
		return InvalidInput(fmt.Errorf("--max-series %d: at least 1", opts.MaxSeries))
	}
	return nil
}

func appliedWord(action string) string {
	if action == "none" {
		return "in sync"
	}
	return action
}

// agentLoop serves and keeps the profile until SIGINT or SIGTERM (ctx) ends it: SIGHUP and a
// change of the file reload it, the interval checks it. ready says so (the notice, READY=1)
// once the file is watched and SIGHUP is claimed: a reload or a change of the file right after
// is neither missed nor, for SIGHUP, the end of the agent.
func agentLoop(ctx context.Context, opts *AgentOptions, a *agent.Agent, l net.Listener, ready func()) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed, err := agent.Watch(ctx, opts.File)
	if err != nil {
		return fmt.Errorf("watching %s: %w", safe(opts.File), err)
	}
	hup, release := claimSIGHUP()
	defer release()
	reload := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			case <-changed:
			}
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	ready()
	log := slog.New(slog.NewTextHandler(opts.G.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, l, opts.WebConfig, log) }()
	runErr := a.Run(ctx, reload)
	cancel()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if runErr != nil {
		return runErr
	}
	return parent.Err()
}
