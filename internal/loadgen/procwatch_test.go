package loadgen

import (
	"bytes"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
)

// The server under test here is this process (the baseline server runs in
// it): the report gives its memory, open files and CPU per request.
func TestRunWatchesProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	srv := httptest.NewServer(BaselineHandler(BaselineOptions{}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Requests = 200
	const gone = 1 << 30 // above any pid_max: no such process
	cfg.WatchPIDs = []int{os.Getpid(), gone}
	rep := runFor(t, cfg)
	if len(rep.Processes) != 2 {
		t.Fatalf("%d processes reported, want 2", len(rep.Processes))
	}
	self, missing := rep.Processes[0], rep.Processes[1]
	if self.PID != os.Getpid() || self.Samples == 0 || self.Name == "" {
		t.Fatalf("own process: %+v", self)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if self.PeakRSSBytes < int64(m.HeapInuse) || self.PeakFDs < 3 {
		t.Errorf("own process: peak RSS %d (heap in use %d), peak fds %d", self.PeakRSSBytes, m.HeapInuse, self.PeakFDs)
	}
	if self.CPUSeconds <= 0 || self.CPUPerRequestMS <= 0 {
		t.Errorf("own process: CPU %v s, %v ms per request; want positive (it served %d requests)", self.CPUSeconds, self.CPUPerRequestMS, rep.Completed)
	}
	if missing.Samples != 0 || missing.Error == "" {
		t.Errorf("a process that does not exist: %+v; want no samples and an error", missing)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "peak RSS") || !strings.Contains(b.String(), "per stream") || !strings.Contains(b.String(), "not read") {
		t.Errorf("table does not report the processes:\n%s", b.String())
	}
}
