"""Every page, run by Streamlit's AppTest over a lake of known rows: the numbers shown are
the numbers put in (expected values are derived from the fixture's rows, newest version wins)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import pages as page_table
from harness import lake_rows
from tests.dashboard.conftest import (
    CLUSTER,
    GROUP_EPOCH,
    MEMBER_EPOCHS,
    OWNERS,
    PENDING,
    KnownLake,
    broker_gauges,
    group_status,
    newest,
)

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")
#: Every page of the navigation, by name (its view file's name).
PAGES = [page.name for page in page_table.PAGES]


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page != page_table.default_page().name:  # the default page opens first
        at.switch_page(f"views/{page}.py")
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def frames(at: AppTest) -> list[pd.DataFrame]:
    return [d.value for d in at.dataframe]


def shown_time_lag(seconds: float | None, method: str | None) -> str:
    """A time lag as the tables show it: '≥ 3m 26s' for a lower bound, '—' when unknown."""
    if seconds is None or pd.isna(seconds):
        return "—"
    minutes, secs = divmod(round(seconds), 60)
    text = f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"
    return f"≥ {text}" if method == "commit_age_lower_bound" else text


def fmt(value: float) -> str:
    return f"{value:,.0f}"


def test_overview_tiles_groups_alerts_pipeline(known_lake: KnownLake) -> None:
    at = open_page("overview")
    shown = metrics(at)
    up = broker_gauges(known_lake, "up")
    assert shown["Brokers up"] == fmt(sum(1 for v in up.values() if v >= 1))
    assert shown["Brokers down"] == fmt(sum(1 for v in up.values() if v < 1))
    for metric, label in [
        ("active_controller_count", "Active controllers"),
        ("under_replicated_partitions", "Under-replicated partitions"),
        ("offline_partitions", "Offline partitions"),
        ("under_min_isr_partitions", "Under-min-ISR partitions"),
    ]:
        assert shown[label] == fmt(sum(broker_gauges(known_lake, metric).values())), label
    status = group_status(known_lake)
    by_time, by_lag = frames(at)[0], frames(at)[1]
    # Worst time lag: a lagging group whose time lag is unknown first (it may be the worst), by lag.
    unknown = status[status["max_time_lag_s"].isna() & (status["total_lag"] > 0)]
    worst_time = unknown.sort_values("total_lag", ascending=False).iloc[0]
    assert by_time.iloc[0]["max_time_lag_s"] == "—"
    known = status[status["max_time_lag_s"].notna()].sort_values("max_time_lag_s", ascending=False)
    assert by_time["group_id"].tolist()[len(unknown) :] == known["group_id"].tolist()
    worst_lag = status.sort_values("total_lag", ascending=False).iloc[0]
    assert by_time.iloc[0][["group_id", "status", "reason"]].tolist() == [
        worst_time["group_id"],
        worst_time["status"],
        worst_time["reason"],
    ]
    assert by_lag.iloc[0]["total_lag"] == worst_lag["total_lag"]
    for table in (by_time, by_lag):  # the numbers come before the (long, truncated) reason
        assert list(table.columns) == ["group_id", "status", "max_time_lag_s", "total_lag", "reason"]
    assert sorted(by_lag["group_id"]) == sorted(status["group_id"])
    rate_charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert [c["layout"]["yaxis"]["title"]["text"] for c in rate_charts] == ["messages/s", "bytes/s"]
    assert all(c["layout"]["yaxis"]["rangemode"] == "tozero" for c in rate_charts), "rates need a zero baseline"
    firing = frames(at)[2]
    assert not any(str(chips).startswith("{") for chips in firing["labels"]), "labels shown as a raw JSON blob"
    states = newest(
        [e for e in known_lake.rows["alert_events"] if e["event"] != "delivered"], ("incident_key",), ("ts", "seq")
    )
    assert sorted(firing["incident_key"]) == sorted(e["incident_key"] for e in states if e["event"] != "resolved")
    latest_progress = max(known_lake.rows["pipeline_progress"], key=lambda r: r["ts"])
    assert shown["Input (rows/s)"] == fmt(latest_progress["input_rows_per_s"])
    assert shown["Pipeline freshness"] == f"{round(latest_progress['freshness_s'])}s"


def test_brokers_balance_elections_scrape(known_lake: KnownLake) -> None:
    at = open_page("brokers")
    shown = metrics(at)
    partitions = pd.Series(broker_gauges(known_lake, "partition_count"))
    leaders = pd.Series(broker_gauges(known_lake, "leader_count"))
    assert shown["Brokers reporting"] == fmt(len(partitions))
    assert shown["Partition skew"].startswith(f"{(partitions.max() / partitions.mean() - 1) * 100:,.0f}")
    assert shown["Leader skew"].startswith(f"{(leaders.max() / leaders.mean() - 1) * 100:,.0f}")
    elections = [r for r in known_lake.rows["metrics_1m"] if r["metric"] == "leader_elections_total"]
    assert shown["Leader elections in range"] == fmt(sum(r["rate_per_s"] * 60 for r in elections))
    balance, events, scrape = frames(at)
    assert dict(zip(balance["broker"], balance["partition_count"], strict=True)) == partitions.to_dict()
    assert events["broker"].tolist() == [r["broker"] for r in elections if r["rate_per_s"] > 0]
    up_rows = [r for r in known_lake.rows["metrics_1m"] if r["metric"] == "up"]
    assert len(scrape) == len({(r["source"], r.get("broker"), r.get("client_id")) for r in up_rows})
    down = scrape[scrape["up"] < 1]
    assert down["broker"].tolist() == [b for b, v in broker_gauges(known_lake, "up").items() if v < 1]


def test_topics_rates_growth_consumers(known_lake: KnownLake) -> None:
    at = open_page("topics", topic="orders")
    table, consumers = frames(at)
    offsets = [r for r in known_lake.rows["metrics_1m"] if r["metric"] == "log_end_offset"]
    for topic in {r["topic"] for r in offsets}:
        rows = [r for r in offsets if r["topic"] == topic]
        first = sum(r["first"] for r in rows if r["window_start"] == min(x["window_start"] for x in rows))
        last = sum(r["last"] for r in rows if r["window_start"] == max(x["window_start"] for x in rows))
        shown = table[table["topic"] == topic].iloc[0]
        assert shown["growth"] == last - first
        assert shown["end_offset"] == last
        assert shown["partitions"] == len({r["partition"] for r in rows})
    rates = [r for r in known_lake.rows["metrics_1m"] if r["metric"] == "messages_in_total" and r.get("topic")]
    orders = table[table["topic"] == "orders"].iloc[0]
    assert orders["messages_in_total"] == pytest.approx(sum(r["rate_per_s"] for r in rates if r["topic"] == "orders"))
    lag = [r for r in known_lake.rows["lag_1m"] if r["topic"] == "orders"]
    newest_lag = newest(lag, ("group_id", "partition"), ("window_start",))
    expected = {g: sum(r["lag"] for r in newest_lag if r["group_id"] == g) for g in {r["group_id"] for r in lag}}
    assert dict(zip(consumers["group_id"], consumers["total_lag"], strict=True)) == expected


def test_groups_table_and_drill_down(known_lake: KnownLake) -> None:
    status = group_status(known_lake)
    at = open_page("groups", group="audit")
    table = frames(at)[0]
    assert sorted(table["group_id"]) == sorted(status["group_id"])
    assert list(table.columns).index("reason") > list(table.columns).index("eta_s"), "numbers before the reason"
    for _, expected in status.iterrows():
        row = table[table["group_id"] == expected["group_id"]].iloc[0]
        assert row[["status", "reason", "total_lag", "max_time_lag_s"]].tolist() == [
            expected["status"],
            expected["reason"],
            expected["total_lag"],
            shown_time_lag(expected["max_time_lag_s"], expected.get("max_time_lag_method")),
        ]
    latest = newest(known_lake.rows["lag_1m"], ("group_id", "topic", "partition"), ("window_start",))
    audit = [r for r in latest if r["group_id"] == "audit"]
    row = table[table["group_id"] == "audit"].iloc[0]
    # Columns with a blank somewhere are text (a number column cannot say "not catching up").
    assert float(row["consume_rate"]) == pytest.approx(sum(r["consume_rate"] for r in audit), abs=0.05)
    assert float(row["produce_rate"]) == pytest.approx(sum(r["produce_rate"] for r in audit), abs=0.05)
    assert float(row["eta_s"]) == max(r["eta_s"] for r in audit)
    assert float(row["rate_span_s"]) == min(r["rate_span_s"] for r in audit)
    stalled = table[table["group_id"] == "orders-app"].iloc[0]
    assert stalled["eta_s"] == "not catching up", "newest windows have no ETA: not an older window's 600 s"
    shown = metrics(at)
    eta = round(float(row["eta_s"]))
    assert shown["Time to catch up"] == f"{eta // 60}m {eta % 60:02d}s"
    audit_status = status[status["group_id"] == "audit"].iloc[0]
    assert shown["Status"] == audit_status["status"]
    assert shown["Total lag (messages)"] == fmt(audit_status["total_lag"])
    assert (shown["Members"], shown["Rebalances"]) == (fmt(audit_status["members"]), "1")
    owners = frames(at)[1]  # who owns each lagging partition of the group, newest minute
    expected = [(r["topic"], r["partition"], r["lag"], *OWNERS[("audit", r["topic"], r["partition"])]) for r in audit]
    shown_owners = owners[["topic", "partition", "lag", "owner_member_id", "owner_client_id", "owner_host"]]
    assert [tuple(r) for r in shown_owners.itertuples(index=False)] == expected
    assert owners["owner_changes"].tolist() == [1]
    assert len(at.get("plotly_chart")) == 5  # heatmap, lag, time lag, status timeline, rates


def test_drill_down_of_a_kip848_group_names_pending_owners_and_epochs(known_lake: KnownLake) -> None:
    at = open_page("groups", group="billing")
    assert not at.exception
    assert any(f"group epoch: {GROUP_EPOCH}" in c.value for c in at.caption), [c.value for c in at.caption]
    owners = frames(at)[1]
    assert owners["owner_pending"].tolist() == [PENDING[("billing", "payments", 0)]]
    epochs = frames(at)[2]  # the newest minute's members only: billing-0 left before it
    expected = [(client, epoch, GROUP_EPOCH - epoch) for client, epoch in sorted(MEMBER_EPOCHS[0].items())]
    assert [tuple(r) for r in epochs[["client_id", "member_epoch", "behind"]].itertuples(index=False)] == expected


def test_drill_down_of_a_classic_group_shows_no_epochs(known_lake: KnownLake) -> None:
    at = open_page("groups", group="audit")
    assert len(frames(at)) == 2 and not any("group epoch" in c.value for c in at.caption)


def test_drill_down_says_not_catching_up(known_lake: KnownLake) -> None:
    latest = newest(known_lake.rows["lag_1m"], ("group_id", "topic", "partition"), ("window_start",))
    orders = [r for r in latest if r["group_id"] == "orders-app"]
    assert all(r["eta_s"] is None and r["lag"] > 0 for r in orders)
    at = open_page("groups", group="orders-app")
    assert metrics(at)["Time to catch up"] == "not catching up"
    assert any("over the last 45s" in c.value for c in at.caption), [c.value for c in at.caption]


def test_groups_search_filters_the_table(known_lake: KnownLake) -> None:
    at = open_page("groups")
    at.text_input(key="group_search").input("BILL").run()
    assert not at.exception
    assert frames(at)[0]["group_id"].tolist() == ["billing"]


def test_groups_table_shows_and_filters_the_group_type(known_lake: KnownLake) -> None:
    at = open_page("groups")
    shown = frames(at)[0]
    expected = group_status(known_lake).set_index("group_id")["group_type"].fillna("—").to_dict()  # —: never said
    assert dict(zip(shown["group_id"], shown["group_type"], strict=True)) == expected
    at.multiselect(key="group_type_filter").select("consumer").run()
    assert not at.exception
    assert frames(at)[0]["group_id"].tolist() == ["billing"]


def test_alerts_firing_and_history(known_lake: KnownLake) -> None:
    at = open_page("alerts")
    firing, events = frames(at)[:2]
    rows = known_lake.rows["alert_events"]
    assert len(events) == len(rows)
    shown = metrics(at)
    for event in ("firing", "resolved", "delivered"):
        assert shown[f"{event.capitalize()} events"] == fmt(sum(1 for r in rows if r["event"] == event))
    assert firing["alertname"].tolist() == ["ConsumerLagHigh"]
    firing_labels = json.loads(
        next(r["labels"] for r in rows if r["event"] == "firing" and r["alertname"] == "ConsumerLagHigh")
    )
    expected_chips = [f"{k}={v}" for k, v in sorted(firing_labels.items()) if k != "alertname"]
    assert list(firing.iloc[0]["labels"]) == expected_chips
    assert list(firing.columns[:4]) == ["alertname", "severity", "value", "labels"]
    chips_of = {tuple(sorted(f"{k}={v}" for k, v in json.loads(r["labels"]).items() if k != "alertname")) for r in rows}
    assert {tuple(chips) for chips in events["labels"]} == chips_of


def test_alerts_page_creates_and_expires_a_silence(known_lake: KnownLake) -> None:
    at = open_page("alerts")
    assert metrics(at)["Active silences"] == "0"
    at.text_area[0].input("group_id=orders-app")
    at.text_input[0].input("deploying a fix")
    at.text_input[1].input("on-call")
    at.button[0].click().run()
    assert not at.exception
    assert metrics(at)["Active silences"] == "1"
    silence = frames(at)[-1].iloc[0]
    assert (silence["matchers"], silence["comment"], silence["created_by"]) == (
        "group_id=orders-app",
        "deploying a fix",
        "on-call",
    )
    next(b for b in at.button if b.label == "Expire").click().run()
    assert metrics(at)["Active silences"] == "0"


def test_sql_page_runs_a_read_and_refuses_a_write(known_lake: KnownLake) -> None:
    at = open_page("sql")
    at.text_area(key="sql_text").input(
        "SELECT group_id, total_lag FROM group_status ORDER BY group_id, updated_at"
    ).run()
    at.button[0].click().run()
    assert not at.exception
    result = frames(at)[0]
    rows = newest(known_lake.rows["group_status"], ("group_id", "updated_at"), ("version",))
    expected = [(r["group_id"], r["total_lag"]) for r in sorted(rows, key=lambda r: (r["group_id"], r["updated_at"]))]
    assert list(zip(result["group_id"], result["total_lag"], strict=True)) == expected
    assert [b.label for b in at.get("download_button")] == ["Download CSV", "Download Parquet"]
    at.text_area(key="sql_text").input("DELETE FROM group_status").run()
    at.button[0].click().run()
    assert [e.value for e in at.error] == [
        "DELETE is not allowed: queries over the lake are read-only (SELECT / WITH … SELECT only)."
    ]


def test_pipeline_collectors_targets_spark_dead_letters(known_lake: KnownLake) -> None:
    at = open_page("pipeline")
    shown = metrics(at)
    beats = [r for r in known_lake.rows["metrics_1m"] if r["source"] == "heartbeat"]
    assert shown["Collectors alive"] == fmt(len({r["client_id"] for r in beats}))
    failed = [r["last"] for r in beats if r["metric"] == "collector_samples_failed_total"]
    assert shown["Samples failed"] == fmt(sum(failed))
    dead = known_lake.rows["dead_letters"]
    assert shown["Dead letters"] == fmt(len(dead))
    collectors, _targets, spark, dead_counts, dead_samples = frames(at)
    assert collectors["collector_samples_produced_total"].tolist() == [
        r["last"] for r in beats if r["metric"] == "collector_samples_produced_total"
    ]
    latest = max(known_lake.rows["pipeline_progress"], key=lambda r: r["ts"])
    assert spark.iloc[0][["batch_id", "batch_duration_ms"]].tolist() == [
        latest["batch_id"],
        latest["batch_duration_ms"],
    ]
    by_error = pd.Series([r["error"] for r in dead]).value_counts().to_dict()
    assert dict(zip(dead_counts["error"], dead_counts["records"], strict=True)) == by_error
    assert len(dead_samples) == len(dead)


def test_url_holds_cluster_and_range(known_lake: KnownLake) -> None:
    at = open_page("overview")
    assert at.query_params["range"] == "1h"
    assert at.query_params["cluster"] == "test-cluster"
    at = open_page("overview", range="6h", cluster="test-cluster")
    assert at.sidebar.selectbox(key="range_pick").value == "6h"
    assert at.sidebar.selectbox(key="cluster_pick").value == "test-cluster"
    caption = at.caption[0].value
    start, end = (dt.datetime.strptime(part[-16:], "%Y-%m-%d %H:%M") for part in caption.split(" (")[0].split(" → "))
    assert end - start == dt.timedelta(hours=6)
    at.sidebar.selectbox(key="range_pick").select("24h").run()
    assert at.query_params["range"] == "24h"
    at = open_page("overview", range="custom", **{"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T02:00:00Z"})
    assert at.sidebar.text_input(key="range_from").value == "2026-01-01T00:00:00Z"
    assert "2026-01-01 00:00 → 2026-01-01 02:00" in at.caption[0].value


@pytest.mark.parametrize("page", PAGES)
def test_empty_lake_says_how_to_fill_it(empty_lake: Path, page: str) -> None:
    at = open_page(page)
    if page == "sql":
        assert at.text_area(key="sql_text").value in ("", None)
        return
    assert any("the lake is empty" in i.value.lower() and "lagwatch stream" in i.value for i in at.info)


def test_the_demo_s_simulated_broker_is_labelled_simulated(known_lake: KnownLake) -> None:
    def simulated_captions(page: str) -> list[str]:
        return [c.value for c in open_page(page).caption if "Simulated" in c.value]

    assert simulated_captions("brokers") == [], "real brokers carry no such label"
    window = (known_lake.now - dt.timedelta(minutes=2)).timestamp()
    lake_rows.metric(known_lake.root / "lake", window, "up", 1.0, cluster=CLUSTER, broker="sim-1")
    for page in ("overview", "brokers"):
        (caption,) = simulated_captions(page)
        assert "broker sim-1 is `lagwatch demo`'s JMX simulator" in caption
