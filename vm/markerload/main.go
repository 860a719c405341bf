// Command markerload is the paced load of vm/bench-stream.sh: it writes trace_marker events at
// a fixed rate, so that a reader of trace_pipe can be asked whether it keeps up with that rate
// (rather than with a writer that takes every CPU cycle it can get).
//
//	markerload -file /sys/kernel/tracing/instances/bench/trace_marker -rate 40000 -seconds 3
//
// Each event is one write(2) of a 64-byte line, as `dd bs=64` writes them. The writes are
// paced against the clock every millisecond: a writer that fell behind catches up at once, and
// one that cannot keep the rate says so. It prints "LOAD rate R written N secs T achieved A".
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	file := flag.String("file", "", "the trace_marker file to write")
	rate := flag.Int("rate", 10000, "events per second")
	seconds := flag.Float64("seconds", 3, "how long to write")
	flag.Parse()
	if *file == "" || *rate <= 0 || *seconds <= 0 {
		fmt.Fprintln(os.Stderr, "usage: markerload -file TRACE_MARKER -rate N -seconds S")
		os.Exit(2)
	}
	f, err := os.OpenFile(*file, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "markerload:", err)
		os.Exit(1)
	}
	total := int(float64(*rate) * *seconds)
	line := []byte(fmt.Sprintf("load marker %08d %s\n", 0, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"))[:64]
	line[63] = '\n'
	start := time.Now()
	n := 0
	for n < total {
		due := min(total, int(time.Since(start).Seconds()*float64(*rate))+1)
		for ; n < due; n++ {
			for i, k := 19, n; i >= 12; i, k = i-1, k/10 {
				line[i] = byte('0' + k%10)
			}
			if _, err := f.Write(line); err != nil {
				fmt.Fprintln(os.Stderr, "markerload:", err)
				os.Exit(1)
			}
		}
		if n < total {
			time.Sleep(time.Millisecond)
		}
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("LOAD rate %d written %d secs %.3f achieved %.0f\n", *rate, n, secs, float64(n)/secs)
}
