package frontend

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamo-go/dynamo/pkg/pipeline"
)

// Open-loop (Poisson) arrivals past what one slow worker and a short
// admission queue hold, every stream taking its connection over: every
// request ends in an answer the client reads whole, a stream with its
// [DONE] or a refusal with its status and Retry-After, and none in a
// transport error (a kept-alive connection closed under the client).
func TestOverloadOnDetachedStreamsLosesNothing(t *testing.T) {
	s := newStack(t, Config{DetachStreamsAt: 1}, pipeline.Config{Queue: &pipeline.QueueConfig{Max: 8, Timeout: 50 * time.Millisecond}})
	s.addWorker(t, "demo", helloEngine(t, 2*time.Millisecond))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()

	const requests, rate = 1500, 3000.0 // per second
	var (
		wg                        sync.WaitGroup
		mu                        sync.Mutex
		completed, refused, fails int
		firstFail                 error
	)
	rng := rand.New(rand.NewPCG(1, 2))
	next := time.Now()
	for range requests {
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		time.Sleep(time.Until(next))
		wg.Go(func() {
			status, body, header, err := postStream(client, s.url+"/v1/chat/completions", detachBody)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				fails++
				if firstFail == nil {
					firstFail = err
				}
			case status == http.StatusOK && strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]"):
				completed++
			case (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) && header.Get("Retry-After") != "":
				refused++
			default:
				fails++
				if firstFail == nil {
					firstFail = errors.New("status " + http.StatusText(status) + ": " + body)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d completed, %d refused, %d failed", completed, refused, fails)
	if fails > 0 {
		t.Errorf("%d of %d requests failed (first: %v)", fails, requests, firstFail)
	}
	if refused == 0 || completed == 0 {
		t.Errorf("%d completed and %d refused: the load did not pass the capacity", completed, refused)
	}
}

// postStream posts body and reads the whole answer.
func postStream(client *http.Client, url, body string) (int, string, http.Header, error) {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, err
	}
	return resp.StatusCode, string(b), resp.Header, nil
}
