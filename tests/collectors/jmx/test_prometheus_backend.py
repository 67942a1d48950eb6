"""prometheus backend against a real local HTTP server serving JMX exporter text."""

from __future__ import annotations

from harness.jmx_double import ExporterServer, SilentPort
from shell.broker import free_port
from tests.collectors.jmx.support import scrape, values

STRIMZI_TEXT = """\
# HELP kafka_server_brokertopicmetrics_messagesin_total Attribute exposed for management
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total 1500.0
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 1000.0
kafka_server_brokertopicmetrics_messagesin_total{topic="payments"} 500.0
# TYPE kafka_server_brokertopicmetrics_bytesout_total counter
kafka_server_brokertopicmetrics_bytesout_total{topic="orders"} 2.5e6
this line is { not valid exposition
kafka_server_replicamanager_underreplicatedpartitions 2.0
kafka_controller_kafkacontroller_activecontrollercount 1.0
# TYPE kafka_controller_controllerstats_leaderelectionrateandtimems_count counter
kafka_controller_controllerstats_leaderelectionrateandtimems_count 9.0
kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent 0.8
jvm_threads_current 42.0
"""

CONFLUENT_TEXT = """\
kafka_server_BrokerTopicMetrics_MessagesInPerSec_Count{topic="orders",} 77.0
kafka_server_ReplicaManager_PartitionCount_Value 12.0
kafka_server_BrokerTopicMetrics_Count{name="BytesInPerSec",} 4096.0
kafka_network_SocketServer_NetworkProcessorAvgIdlePercent_Value 0.9
kafka_consumer_consumer_fetch_manager_metrics_records_lag_max{client_id="c7",} 31.0
# TYPE kafka_controller_ControllerStats_UncleanLeaderElectionsPerSec_Count counter
kafka_controller_ControllerStats_UncleanLeaderElectionsPerSec_Count 3.0
"""


def test_strimzi_names_map_and_a_malformed_line_loses_only_itself(exporter_server: ExporterServer) -> None:
    exporter_server.text = STRIMZI_TEXT
    result = scrape(backend="prometheus", url=exporter_server.url)
    assert result.ok
    assert values(result) == {
        ("messages_in_total", None, None): 1500.0,
        ("messages_in_total", "orders", None): 1000.0,
        ("messages_in_total", "payments", None): 500.0,
        ("bytes_out_total", "orders", None): 2.5e6,
        ("under_replicated_partitions", None, None): 2.0,
        ("active_controller_count", None, None): 1.0,
        ("leader_elections_total", None, None): 9.0,
        ("request_handler_avg_idle_percent", None, None): 0.8,
    }
    assert len(result.errors) == 1 and "malformed exporter line 8" in result.errors[0]
    assert {s.source for s in result.samples} == {"prom"}
    assert {s.kind for s in result.samples if s.metric.endswith("_total")} == {"counter"}


def test_confluent_and_default_names_map(exporter_server: ExporterServer) -> None:
    exporter_server.text = CONFLUENT_TEXT
    broker = scrape(backend="prometheus", url=exporter_server.url)
    assert broker.ok and broker.errors == []
    assert values(broker) == {
        ("messages_in_total", "orders", None): 77.0,
        ("partition_count", None, None): 12.0,
        ("bytes_in_total", None, None): 4096.0,
        ("network_processor_avg_idle_percent", None, None): 0.9,
        ("unclean_leader_elections_total", None, None): 3.0,  # the parser reports it as …_Count_total
    }
    client = scrape(backend="prometheus", url=exporter_server.url, broker=None, client_id="c7")
    assert values(client) == {("records_lag_max", None, "c7"): 31.0}


def test_unreachable_wrong_path_and_silent_exporters_fail_the_scrape(
    exporter_server: ExporterServer, silent_port: SilentPort
) -> None:
    refused = scrape(backend="prometheus", url=f"http://127.0.0.1:{free_port()}/metrics")
    assert not refused.ok and "refused" in refused.errors[0].lower()
    missing = scrape(backend="prometheus", url=exporter_server.url.replace("/metrics", "/nope"))
    assert not missing.ok and "HTTP 404" in missing.errors[0]
    silent = scrape(backend="prometheus", url=f"http://127.0.0.1:{silent_port.port}/metrics", timeout_s=1)
    assert not silent.ok and silent_port.accepted >= 1
