// Package compose holds a Docker Compose stack of dynamo-go (compose.yaml:
// etcd, NATS, a frontend, mocker workers, Prometheus, Grafana and Jaeger;
// README.md says how to run it) and the test that checks it without a
// Docker engine: compose-go loads it as docker compose would, every
// command line and variable of the stack's services is one the built
// binaries accept, Prometheus scrapes every process where it serves its
// metrics, Grafana is provisioned with the data source and
// deploy/grafana's dashboard, and traces go to Jaeger.
package compose
