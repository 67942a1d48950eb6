"""JMX collector: broker and consumer-client metrics over JMX (jpype, jmxquery) or exporter text.

Entry point for the runner: `collectors.jmx.collector.build_jmx_collectors(config)`.
The canonical names come from `collectors.jmx.mapping.METRICS` (listed in docs/metrics.md).
"""
