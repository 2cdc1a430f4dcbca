package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProcessStats is what a watched process (Config.WatchPIDs: the server
// under test, say) used during a run, read from /proc (Linux).
type ProcessStats struct {
	PID  int    `json:"pid"`
	Name string `json:"name"` // /proc/PID/comm
	// PeakRSSBytes is the largest resident set seen (sampled; VmRSS).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakFDs is the largest number of open file descriptors seen.
	PeakFDs int `json:"peak_fds"`
	// CPUSeconds is the user + system CPU time the process used from the
	// first measured request's send to the end of the run.
	CPUSeconds float64 `json:"cpu_s"`
	// CPUPerRequestMS is CPUSeconds per completed measured request, in ms.
	CPUPerRequestMS float64 `json:"cpu_per_request_ms"`
	// Samples is how many times the process was read; Error is set when it
	// could not be (it exited, or /proc is absent).
	Samples int    `json:"samples"`
	Error   string `json:"error,omitempty"`
}

// clockTicks is the kernel's USER_HZ: /proc/PID/stat counts CPU time in
// these (100 on every Linux this runs on; Go has no sysconf without cgo).
const clockTicks = 100

// procWatch samples processes until stop. It owns one goroutine.
type procWatch struct {
	every time.Duration
	done  chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	stats []ProcessStats
	start []float64 // CPU seconds at markStart, -1 until then
	last  []float64 // CPU seconds at the last sample
}

// watchProcesses starts sampling pids every interval.
func watchProcesses(pids []int, every time.Duration) *procWatch {
	w := &procWatch{every: every, done: make(chan struct{})}
	for _, pid := range pids {
		w.stats = append(w.stats, ProcessStats{PID: pid, Name: readComm(pid)})
		w.start = append(w.start, -1)
		w.last = append(w.last, 0)
	}
	w.sample()
	w.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				w.sample()
			}
		}
	})
	return w
}

// markStart records the CPU time at the start of the measured window.
func (w *procWatch) markStart() {
	if w == nil {
		return
	}
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.stats {
		if w.start[i] < 0 {
			w.start[i] = w.last[i]
		}
	}
}

// stop ends the sampling and returns the statistics, with CPU per
// request over completed requests.
func (w *procWatch) stop(completed int) []ProcessStats {
	if w == nil {
		return nil
	}
	close(w.done)
	w.wg.Wait()
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]ProcessStats, len(w.stats))
	for i, s := range w.stats {
		if w.start[i] >= 0 {
			s.CPUSeconds = w.last[i] - w.start[i]
			if completed > 0 {
				s.CPUPerRequestMS = s.CPUSeconds * 1000 / float64(completed)
			}
		}
		out[i] = s
	}
	return out
}

// sample reads every process once.
func (w *procWatch) sample() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.stats {
		s := &w.stats[i]
		rss, err := readRSS(s.PID)
		if err == nil {
			var cpu float64
			if cpu, err = readCPU(s.PID); err == nil {
				w.last[i] = cpu
			}
		}
		if err != nil {
			if s.Error == "" {
				s.Error = err.Error()
			}
			continue
		}
		s.Samples++
		s.PeakRSSBytes = max(s.PeakRSSBytes, rss)
		if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.PID)); err == nil {
			s.PeakFDs = max(s.PeakFDs, len(fds))
		}
	}
}

func readComm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readRSS returns VmRSS from /proc/PID/status, in bytes.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := strings.Fields(string(rest)) // "123456 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("process %d: no VmRSS in /proc status", pid)
}

// readCPU returns the user + system CPU seconds from /proc/PID/stat.
func readCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("process %d: bad /proc stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("process %d: short /proc stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("process %d: bad CPU times in /proc stat", pid)
	}
	return float64(ut+st) / clockTicks, nil
}
