// Command readloop is the workload of vm/bench-hist.sh and vm/bench-peers.sh: a fixed syscall
// loop, read(2) of a few bytes of a file from offset 0 (pread64), as fast as it can for a given
// time, or exactly -count times; it prints "READS ops N secs T rate R" (R in reads per second)
// and, with -count, also "pid P cpu C t0 S t1 E" (its thread id, the one that reads, its own
// user+system CPU seconds, and the wall clock in Unix nanoseconds at its first and last read). Each read goes through vfs_read.
//
//	readloop -file /tmp/small -seconds 5
//	readloop -file /proc/version -bytes 1 -count 200000
//	readloop -getppid -count 200000
//
// -getppid makes getppid(2) calls instead of reads: a system call whose kernel function
// (__x64_sys_getppid) does next to nothing, to measure what a latency tool adds to a call.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"
)

// The reads are made by the main thread, whose id is the process's: a tool that counts the
// calls of the command's pid (ftctl latency -- CMD, perf ftrace -- CMD) sees all of them.
func init() { runtime.LockOSThread() }

func main() {
	file := flag.String("file", "", "the file to read")
	seconds := flag.Float64("seconds", 5, "how long to read")
	count := flag.Int("count", 0, "read exactly `N` times (then -seconds is ignored)")
	bytes := flag.Int("bytes", 16, "bytes per read (1 to 16)")
	getppid := flag.Bool("getppid", false, "call getppid(2) instead of reading (with -count)")
	flag.Parse()
	if *getppid && *count > 0 {
		*file = os.DevNull
	}
	f, err := os.Open(*file)
	if *file == "" || err != nil || *seconds <= 0 || *count < 0 || *bytes < 1 || *bytes > 16 {
		fmt.Fprintln(os.Stderr, "usage: readloop -file FILE [-seconds S | -count N] [-bytes B]", err)
		os.Exit(2)
	}
	fd := int(f.Fd())
	var buf [16]byte
	b := buf[:*bytes]
	if *count > 0 {
		start := time.Now()
		for i := 0; i < *count; i++ {
			if *getppid {
				syscall.Getppid()
				continue
			}
			if _, err := syscall.Pread(fd, b, 0); err != nil {
				fmt.Fprintln(os.Stderr, "readloop:", err)
				os.Exit(1)
			}
		}
		secs := time.Since(start).Seconds()
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		fmt.Printf("READS ops %d secs %.3f rate %.0f pid %d cpu %.3f t0 %d t1 %d\n", *count, secs, float64(*count)/secs,
			syscall.Gettid(), cpu, start.UnixNano(), start.Add(time.Duration(secs*1e9)).UnixNano())
		return
	}
	end := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	start := time.Now()
	n := 0
	for {
		for i := 0; i < 256; i++ { // the clock read once per 256 reads
			if _, err := syscall.Pread(fd, b, 0); err != nil {
				fmt.Fprintln(os.Stderr, "readloop:", err)
				os.Exit(1)
			}
		}
		n += 256
		if !time.Now().Before(end) {
			break
		}
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("READS ops %d secs %.3f rate %.0f\n", n, secs, float64(n)/secs)
}
