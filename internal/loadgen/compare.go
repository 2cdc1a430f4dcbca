package loadgen

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteCompare writes reports a and b side by side with the difference
// b − a and the ratio b / a of every number: pass the baseline as a and
// the system under test as b to read the stack's overhead. The watched
// processes' CPU per request is compared where both reports have a
// process in the same place (Config.WatchPIDs order), and a multi-turn run's
// TTFT by turn where both have the turn.
func WriteCompare(w io.Writer, a, b *Report, nameA, nameB string) error {
	var out strings.Builder
	fmt.Fprintf(&out, "a = %s\nb = %s\n\n", nameA, nameB)
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\ta\tb\tb − a\tb / a\t")
	row := func(name string, x, y float64) {
		ratio := "-"
		if x != 0 {
			ratio = fmt.Sprintf("%.3f", y/x)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%+.3f\t%s\t\n", name, x, y, y-x, ratio)
	}
	row("completed", float64(a.Completed), float64(b.Completed))
	row("refused", float64(a.Refused), float64(b.Refused))
	row("failed", float64(a.Failed), float64(b.Failed))
	row("retried (idle conn closed)", float64(a.RetriedIdleConn), float64(b.RetriedIdleConn))
	row("duration s", a.DurationS, b.DurationS)
	row("request tput req/s", a.RequestThroughput, b.RequestThroughput)
	row("goodput req/s", a.Goodput, b.Goodput)
	row("output tput tok/s", a.OutputTokenThroughput, b.OutputTokenThroughput)
	row("input tput tok/s", a.InputTokenThroughput, b.InputTokenThroughput)
	row("content chunks per request", perCompleted(a.ContentChunks, a.Completed), perCompleted(b.ContentChunks, b.Completed))
	row("arrival rate req/s", a.ArrivalRate, b.ArrivalRate)
	for _, m := range []struct {
		name string
		x, y Summary
	}{{"TTFT", a.TTFT, b.TTFT}, {"ITL", a.ITL, b.ITL}, {"TPOT", a.TPOT, b.TPOT}, {"E2E", a.E2E, b.E2E}} {
		row(m.name+" mean ms", m.x.Mean, m.y.Mean)
		row(m.name+" p50 ms", m.x.P50, m.y.P50)
		row(m.name+" p90 ms", m.x.P90, m.y.P90)
		row(m.name+" p99 ms", m.x.P99, m.y.P99)
		row(m.name+" max ms", m.x.Max, m.y.Max)
	}
	for i := range min(len(a.Processes), len(b.Processes)) {
		pa, pb := a.Processes[i], b.Processes[i]
		name := pa.Name
		if pb.Name != pa.Name {
			name += "/" + pb.Name
		}
		row(fmt.Sprintf("process %d (%s) CPU ms per completed %s", i+1, name, unit(b)), pa.CPUPerRequestMS, pb.CPUPerRequestMS)
	}
	turnsB := map[[2]int]TurnStats{}
	for _, t := range b.Turns {
		turnsB[[2]int{t.Turn, t.LastTurn}] = t
	}
	for _, ta := range a.Turns {
		if tb, ok := turnsB[[2]int{ta.Turn, ta.LastTurn}]; ok {
			row("turn "+ta.turns()+" TTFT p50 ms", ta.TTFT.P50, tb.TTFT.P50)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// unit names what r's requests are: turns in a multi-turn run.
func unit(r *Report) string {
	if r.Config.Workload == WorkloadMultiTurn {
		return "turn"
	}
	return "request"
}

// perCompleted is n per completed request (0 with none completed).
func perCompleted(n int64, completed int) float64 {
	if completed == 0 {
		return 0
	}
	return float64(n) / float64(completed)
}
