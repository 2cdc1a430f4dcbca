package loadgen

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// maxTurnRows bounds the rows of the table by turn: conversations of
// more turns are shown in runs of consecutive turns.
const maxTurnRows = 40

// TurnStats is one row of a multi-turn run's table by turn number: the
// completed measured turns of number Turn through LastTurn.
type TurnStats struct {
	// Turn and LastTurn are the row's first and last turn numbers,
	// counted from 1; they are equal unless the conversations have more
	// than 40 turns.
	Turn     int `json:"turn"`
	LastTurn int `json:"last_turn"`
	// Completed counts the row's completed turns.
	Completed int `json:"completed"`
	// PromptTokens is their mean prompt length: usage.prompt_tokens as
	// the server reported it, else the words of the messages.
	PromptTokens float64 `json:"prompt_tokens_mean"`
	// TTFT is their time to first token.
	TTFT Summary `json:"ttft_ms"`
}

// ConversationStats counts how the conversations of a multi-turn run
// that had a measured turn ended.
type ConversationStats struct {
	// Finished conversations completed every turn.
	Finished int `json:"finished"`
	// Failed conversations ended at a turn that failed or was refused.
	Failed int `json:"failed"`
	// Unfinished conversations were cut short by the end of the run
	// (Requests, Duration or an interruption).
	Unfinished int `json:"unfinished"`
}

// conversationEnd is how a conversation ended.
type conversationEnd int

const (
	convFinished conversationEnd = iota
	convFailed
	convUnfinished
)

// turnCollector keeps the per-turn statistics of a multi-turn run;
// the collector's lock guards it. Its methods do nothing on nil.
type turnCollector struct {
	ttft      [][]time.Duration // by turn − 1
	completed []int
	prompt    []int64
	conv      ConversationStats
}

func newTurnCollector(turns int) *turnCollector {
	return &turnCollector{ttft: make([][]time.Duration, turns), completed: make([]int, turns), prompt: make([]int64, turns)}
}

// record adds completed turn turn (from 1) of o with promptTokens.
func (t *turnCollector) record(turn int, o outcome, promptTokens int) {
	if t == nil || turn < 1 || turn > len(t.completed) {
		return
	}
	i := turn - 1
	t.completed[i]++
	t.prompt[i] += int64(promptTokens)
	if o.hasContent {
		t.ttft[i] = append(t.ttft[i], o.ttft)
	}
}

func (t *turnCollector) ended(end conversationEnd) {
	if t == nil {
		return
	}
	switch end {
	case convFinished:
		t.conv.Finished++
	case convFailed:
		t.conv.Failed++
	default:
		t.conv.Unfinished++
	}
}

// report returns the rows by turn (nil when no turn completed) and the
// conversation counts.
func (t *turnCollector) report() ([]TurnStats, *ConversationStats) {
	if t == nil {
		return nil, nil
	}
	conv := t.conv
	n := len(t.completed)
	width := (n + maxTurnRows - 1) / maxTurnRows
	var rows []TurnStats
	for first := 0; first < n; first += width {
		last := min(first+width, n)
		row := TurnStats{Turn: first + 1, LastTurn: last}
		var ttft []time.Duration
		var prompt int64
		for i := first; i < last; i++ {
			row.Completed += t.completed[i]
			prompt += t.prompt[i]
			ttft = append(ttft, t.ttft[i]...)
		}
		if row.Completed == 0 {
			continue
		}
		row.PromptTokens = round3(float64(prompt) / float64(row.Completed))
		row.TTFT = summarize(ttft)
		rows = append(rows, row)
	}
	return rows, &conv
}

// writeTurns writes the table by turn.
func writeTurns(w io.Writer, rows []TurnStats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "turn\tcompleted\tprompt tokens\tTTFT p50 ms\tTTFT p90 ms\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.3f\t%.3f\t\n", r.turns(), r.Completed, r.PromptTokens, r.TTFT.P50, r.TTFT.P90)
	}
	return tw.Flush()
}

// turns names the row's turns: "7", or "41-42".
func (r TurnStats) turns() string {
	if r.LastTurn <= r.Turn {
		return strconv.Itoa(r.Turn)
	}
	return fmt.Sprintf("%d-%d", r.Turn, r.LastTurn)
}
