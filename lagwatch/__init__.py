"""Lagwatch: Kafka monitoring and consumer-lag analytics.

This package holds what the parts share: the config model, the sample contract, the lake
contract, the Kafka client factory, the embedded broker and the CLI.
"""

__version__ = "0.1.0"
