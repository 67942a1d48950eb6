"""`lagwatch api`: a read-only HTTP API over the lake for the tools operators already run.

Prometheus `/metrics` (kafka-lag-exporter's and Burrow's names), Burrow's v3 HTTP API,
`/healthz` and `/readyz`. It reads only the lake (never Kafka) and never imports another part.
"""
