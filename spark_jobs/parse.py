"""Raw Kafka records from Spark's native source → decoded samples, packed (``packed.py``).

The records are decoded in Python, a whole Arrow batch at a time (``mapInArrow`` over
:func:`decode.decode_batch`): cheaper than ``from_json`` with the same checks as Spark
expressions (bench/RECORDS.md). ``decode.py`` says how a batch is read and which check names a
record's error. The bundled Python Kafka source runs the same decoder, and the router, in its
reader; after this module ``route.routed`` routes the packed rows, so both sources hand
``rollups.rollups`` the same routed frame.

A packed batch holds valid samples (`error` NULL) and dead letters side by side, so the topic
is read and decoded once and both go through one query (``route.py`` sends the dead letters
past the state). A dead letter carries its raw text (cut at DEAD_LETTER_RAW_CHARS characters,
and the row says so), the first reason it failed and its topic/partition/offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame

from spark_jobs.decode import KAFKA_INPUT_SCHEMA, decode_batch
from spark_jobs.packed import PACKED_DDL, pack_batches


def parse_records(records: DataFrame, max_record_bytes: int) -> DataFrame:
    """KAFKA_RECORD_SCHEMA rows → a packed frame of their decode.DECODED_SCHEMA rows."""
    return records.select(*KAFKA_INPUT_SCHEMA.names).mapInArrow(
        partial(decode_and_pack, max_record_bytes=max_record_bytes), PACKED_DDL
    )


def decode_and_pack(batches: Iterable[pa.RecordBatch], max_record_bytes: int) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: each non-empty batch of records → one packed row of decoded samples."""
    return pack_batches(decode_batch(records, max_record_bytes) for records in batches if records.num_rows)
