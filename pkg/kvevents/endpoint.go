package kvevents

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// RankEndpoint returns the endpoint data-parallel rank rank of an engine
// publishes on, given rank 0's: vLLM's and SGLang's publishers bind
// port+rank for every rank (vLLM's ZmqEventPublisher.offset_endpoint_port),
// the replay socket likewise. Rank 0's endpoint is returned as it is; any
// other needs tcp://host:port.
func RankEndpoint(endpoint string, rank int) (string, error) {
	if rank == 0 || endpoint == "" {
		return endpoint, nil
	}
	hostPort, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return "", fmt.Errorf("kvevents: endpoint %q: rank %d needs tcp://host:port (its port + %d)", endpoint, rank, rank)
	}
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", fmt.Errorf("kvevents: endpoint %q: %w", endpoint, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port+rank > 65535 {
		return "", fmt.Errorf("kvevents: endpoint %q: rank %d's port %s+%d is not a port", endpoint, rank, portText, rank)
	}
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(port+rank)), nil
}
