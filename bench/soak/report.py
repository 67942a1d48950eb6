"""The soak's record as one self-contained Plotly HTML page (bench/soak-report.html, git-ignored):
one chart per measure over time, bars drawn as dashed lines, the results table on top."""

from __future__ import annotations

import html
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.common import Result, format_table
from bench.soak.sampler import Minute

REPORT = Path(__file__).resolve().parents[1] / "soak-report.html"

Series = dict[str, list[float | None]]


def _per_component(minutes: Sequence[Minute], value: Callable[[Minute, str], float | None]) -> Series:
    names = list(minutes[-1].processes)
    return {name: [value(m, name) if name in m.processes else None for m in minutes] for name in names}


def _cpu_per_minute(minutes: Sequence[Minute]) -> Series:
    """% of one core used in each minute (CPU seconds between two samples over the wall time)."""
    series: Series = {}
    for name in minutes[-1].processes:
        values: list[float | None] = [None]
        for before, after in itertools.pairwise(minutes):
            if name in before.processes and name in after.processes and after.t_min > before.t_min:
                used = after.processes[name].cpu_s - before.processes[name].cpu_s
                values.append(used / ((after.t_min - before.t_min) * 60) * 100)
            else:
                values.append(None)
        series[name] = values
    return series


def _per_table(minutes: Sequence[Minute], value: Callable[[Minute, str], float]) -> Series:
    return {t: [value(m, t) if t in m.tables else None for m in minutes] for t in minutes[-1].tables}


def charts(minutes: Sequence[Minute], file_bound: int) -> list[tuple[str, str, Series, float | None]]:
    """(title, unit, series, bar) per chart."""
    return [
        ("RSS per component (process tree)", "MB", _per_component(minutes, lambda m, n: m.processes[n].rss_mb), None),
        ("PSS per component (process tree)", "MB", _per_component(minutes, lambda m, n: m.processes[n].pss_mb), None),
        ("CPU per component", "% of a core", _cpu_per_minute(minutes), None),
        ("Live lake files, most in one partition", "files",
         _per_table(minutes, lambda m, t: m.tables[t].max_live_per_partition), file_bound),
        ("Lake files on disk (live + awaiting grace)", "files",
         _per_table(minutes, lambda m, t: m.tables[t].files), None),
        ("Lake bytes per table", "MB", _per_table(minutes, lambda m, t: m.tables[t].bytes / 1e6), None),
        ("Spark checkpoint", "MB", {"checkpoint": [m.checkpoint_mb for m in minutes],
                                    "state stores": [m.state_store_mb for m in minutes]}, None),
        ("Freshness p95 per minute (pipeline_progress)", "s", {"p95": [m.freshness_p95_s for m in minutes]}, 5.0),
        ("/metrics render (median of 3 GETs)", "ms", {"/metrics": [m.metrics_ms for m in minutes]}, None),
        ("Dashboard page in chromium", "ms",
         {p: [m.page_ms.get(p) for m in minutes] for p in minutes[-1].page_ms}, None),
        ("Machine load average (1 min)", "", {"load": [m.load_average for m in minutes]}, None),
    ]  # fmt: skip


def write_report(minutes: Sequence[Minute], results: list[Result], file_bound: int, path: Path = REPORT) -> Path:
    import plotly.graph_objects as go
    import plotly.io as pio

    times = [m.t_min for m in minutes]
    parts = []
    for index, (title, unit, series, bar) in enumerate(charts(minutes, file_bound)):
        figure = go.Figure([go.Scatter(x=times, y=ys, mode="lines+markers", name=name) for name, ys in series.items()])
        if bar is not None:
            figure.add_hline(y=bar, line_dash="dash", annotation_text=f"bar {bar:g} {unit}")
        figure.update_layout(title=title, xaxis_title="minutes since up", yaxis_title=unit, height=380)
        parts.append(pio.to_html(figure, full_html=False, include_plotlyjs="inline" if index == 0 else False))
    table = html.escape(format_table([("soak", r) for r in results]))
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>Lagwatch soak</title></head><body>"
        f"<h1>Lagwatch soak: {times[-1]:.0f} minutes</h1><pre>{table}</pre>{''.join(parts)}</body></html>"
    )
    return path
