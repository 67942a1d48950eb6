"""Backend `prometheus`: the text of a Prometheus JMX exporter endpoint (Strimzi, MSK open
monitoring and Confluent expose broker metrics this way instead of remote JMX).

The exporter's names go through the same mapping table as MBeans (`lookup_exporter`), so a
broker scraped this way yields the same canonical samples as one read over JMX. One
malformed line must not lose the rest of the scrape: when the parser rejects the text, it is
parsed again line by line and only the bad lines are reported.
"""

from __future__ import annotations

import contextlib
import logging
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence

from prometheus_client.parser import text_string_to_metric_families

from collectors.jmx.backend import Reading, ReadResult, TargetDown, as_number, call_with_timeout
from collectors.jmx.mapping import MetricDef, lookup_exporter, sample_labels

log = logging.getLogger(__name__)

#: Exporter text larger than this is refused (a misconfigured URL must not eat the collector's memory).
MAX_BODY_BYTES = 64 * 1024 * 1024


class PrometheusBackend:
    def __init__(self, url: str, timeout_s: float) -> None:
        self.url = url
        self.timeout_s = timeout_s

    def read(self, definitions: Sequence[MetricDef]) -> ReadResult:
        # urlopen's timeout is per socket operation; a trickling server is cut by the wall clock.
        text = call_with_timeout(self._fetch, self.timeout_s, self.url, contextlib.nullcontext)
        wanted = {id(d) for d in definitions}
        result = ReadResult()
        for name, labels, value in parse_exposition(text, result.errors):
            definition = lookup_exporter(name, labels)
            if definition is None or id(definition) not in wanted:
                continue
            number = as_number(value)
            if number is None:
                result.errors.append(f"{name}{labels}: value {value!r} is not a finite number")
                continue
            result.readings.append(Reading(definition, sample_labels(definition, labels), number))
        return result

    def close(self) -> None:
        """Nothing kept open: every scrape is one HTTP request."""

    def _fetch(self) -> str:
        request = urllib.request.Request(self.url, headers={"Accept": "text/plain;version=0.0.4"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body = response.read(MAX_BODY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise TargetDown(f"{self.url}: HTTP {exc.code} {exc.reason}") from None
        except (TimeoutError, urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TargetDown(f"{self.url}: {reason}") from None
        if len(body) > MAX_BODY_BYTES:
            raise TargetDown(f"{self.url}: exposition larger than {MAX_BODY_BYTES} bytes")
        return body.decode("utf-8", "replace")


def parse_exposition(text: str, errors: list[str]) -> Iterable[tuple[str, dict[str, str], float]]:
    """(sample name, labels, value) of every parsable sample; unparsable lines go to `errors`."""
    try:
        return [(s.name, s.labels, s.value) for family in text_string_to_metric_families(text) for s in family.samples]
    except Exception as exc:  # the parser raises ValueError/TypeError/IndexError on bad lines
        log.debug("exposition did not parse as a whole (%s); parsing line by line", exc)
    samples = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            families = list(text_string_to_metric_families(line + "\n"))
        except Exception as exc:
            errors.append(f"malformed exporter line {number}: {line[:120]!r} ({exc})")
            continue
        samples.extend((s.name, s.labels, s.value) for family in families for s in family.samples)
    return samples
