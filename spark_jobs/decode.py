"""Raw sample values → typed Arrow columns and each record's first error, a whole batch at once.

Pure pyarrow, no Spark: the Python Kafka source runs :func:`decode_batch` in its reader, and
``parse.py`` runs it in ``mapInArrow`` after Spark's native source. Why not Spark's ``from_json``:
parsing was the job's largest cost, and pyarrow's JSON reader with column-wise checks is
cheaper (bench/RECORDS.md).

How a batch is read:

1. The values that start with ``{`` (not null, not over ``max_record_bytes``) are joined with
   ``\\n`` and read in one call against the contract's schema (:data:`ARROW_SCHEMA`).
2. One bad record makes the reader reject its whole chunk, and a record holding a line break or
   ``{}{}`` reads as more than one row, so a chunk that fails or returns a different number of
   rows is split (:func:`_read_lines`) until the bad records stand alone. Those, and any value
   not starting with ``{`` or not valid UTF-8 (the batch reader does not check it), are read one
   by one with Python's ``json``, which can say which field has the wrong type and reads what
   the batch reader cannot (a pretty-printed record; invalid UTF-8 is replaced).
3. The checks then run column-wise; the first failing one names the error, in this order:
   empty, oversized, not a JSON object, wrong field type, missing field(s), unknown schema
   version, non-finite value (Python's ``json.dumps`` writes ``NaN``/``Infinity`` by default),
   unknown source, unknown kind.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from lagwatch.samples import KINDS, SAMPLE_FIELDS, SCHEMA_VERSION, SOURCES

#: Raw text kept in a dead letter; longer values are cut and marked as truncated.
DEAD_LETTER_RAW_CHARS = 4096
#: A failing chunk this small is read record by record instead of halved again.
SLOW_CHUNK = 32
#: Fields every sample must carry (labels may be null).
REQUIRED_FIELDS: tuple[str, ...] = tuple(name for name, kind in SAMPLE_FIELDS.items() if not kind.endswith("?"))
_INTEGERS = {"v": pa.int32(), "ts": pa.int64(), "partition": pa.int32()}
#: Contract 1 as Arrow types (the same as spark_jobs.schema.PARSED_SAMPLE_SCHEMA minus event_time).
ARROW_SCHEMA = pa.schema(
    [
        pa.field(name, _INTEGERS.get(name, pa.float64() if kind == "float" else pa.string()))
        for name, kind in SAMPLE_FIELDS.items()
    ]
)
_DEAD_LETTER_FIELDS = (
    pa.field("raw", pa.string()),
    pa.field("source_topic", pa.string()),
    pa.field("source_partition", pa.int32()),
    pa.field("source_offset", pa.int64()),
    pa.field("received_at", pa.timestamp("us", tz="UTC")),
)
#: What decode_batch returns: the sample's fields (NULL on a dead letter, but for a readable
#: cluster), then the dead letter's (NULL on a valid sample).
DECODED_SCHEMA = pa.schema([*ARROW_SCHEMA, pa.field("error", pa.string()), *_DEAD_LETTER_FIELDS])
#: The Kafka record columns the decoder reads, as it reads them; all but `value` pass on to a dead
#: letter as source_topic, source_partition, source_offset and received_at.
KAFKA_INPUT_SCHEMA = pa.schema(
    [
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    ]
)
_PARSE_OPTIONS = pj.ParseOptions(explicit_schema=ARROW_SCHEMA, unexpected_field_behavior="ignore")
_NO_TEXT = pa.scalar(None, pa.string())
_ROW_IN_ERROR = re.compile(r" in row (\d+)")
_INT_RANGES = {pa.int32(): 2**31, pa.int64(): 2**63}


def decode_batch(records: pa.RecordBatch, max_record_bytes: int) -> pa.RecordBatch:
    """Kafka records (value, topic, partition, offset, timestamp) → one DECODED_SCHEMA row each.

    Input types are normalised first: Spark sends large_binary/large_string when
    `spark.sql.execution.arrow.useLargeVarTypes` is on, and accepts either kind back.
    """
    records = records.select(KAFKA_INPUT_SCHEMA.names).cast(KAFKA_INPUT_SCHEMA)
    values = records.column("value")
    rows, errors = decode_values(values, max_record_bytes)
    dead = pc.is_valid(errors)
    if not pc.any(dead).as_py():  # the usual batch: samples as read, no dead-letter fields
        columns = [*rows.columns, errors, *[pa.nulls(len(values), f.type) for f in _DEAD_LETTER_FIELDS]]
        return pa.RecordBatch.from_arrays(columns, schema=DECODED_SCHEMA)
    valid = pc.invert(dead)
    columns = [
        rows.column(name) if name == "cluster" else _null_where(dead, rows.column(name)) for name in rows.schema.names
    ]
    columns += [errors, _raw_texts(values, dead)]
    columns += [_null_where(valid, records.column(name)) for name in KAFKA_INPUT_SCHEMA.names[1:]]
    return pa.RecordBatch.from_arrays(columns, schema=DECODED_SCHEMA)


def decode_values(values: pa.Array, max_record_bytes: int) -> tuple[pa.RecordBatch, pa.Array]:
    """(ARROW_SCHEMA rows, first error or NULL), both aligned with ``values`` (binary)."""
    size = pc.binary_length(values)
    too_big = pc.fill_null(pc.greater(size, max_record_bytes), False)
    readable = pc.and_(pc.is_valid(values), pc.invert(too_big))
    table, unreadable = _read(values, readable)
    rows = pa.RecordBatch.from_arrays([column.combine_chunks() for column in table.columns], schema=ARROW_SCHEMA)
    return rows, _first_error(rows, values, size, too_big, unreadable, max_record_bytes)


def _read(values: pa.Array, readable: pa.Array) -> tuple[pa.Table, pa.Array]:
    """Every readable value as an ARROW_SCHEMA row (NULL where unreadable) and why it was not."""
    # A line starting with "{" gives at least one row or an error, so a chunk of such values
    # that reads into exactly as many rows as values gave one row per value.
    fast = pc.and_(readable, pc.fill_null(pc.starts_with(values, "{"), False))
    fast = pc.and_(fast, _utf8(values))  # the batch reader does not check UTF-8
    slow = np.flatnonzero(pc.and_not(readable, fast).to_numpy(zero_copy_only=False)).tolist()
    pieces = _read_lines(values, np.flatnonzero(fast.to_numpy(zero_copy_only=False)), slow)
    reasons: dict[int, str] = {}
    slow_rows: list[dict[str, Any]] = []
    slow_index: list[int] = []
    for index in slow:
        row, reason = _read_one(values[index].as_py())
        if reason is not None:
            reasons[index] = reason
        if row is not None:
            slow_rows.append(row)
            slow_index.append(index)
    if slow_rows:
        pieces.append((np.array(slow_index, np.int64), pa.Table.from_pylist(slow_rows, schema=ARROW_SCHEMA)))
    return _in_order(pieces, len(values)), _texts_at(reasons, len(values))


def _read_lines(values: pa.Array, index: np.ndarray, slow: list[int]) -> list[tuple[np.ndarray, pa.Table]]:
    """values[index] read as JSON lines, in as few calls as the bad values allow.

    A rejected chunk is split around the row the reader's error names (it reads the rows
    before it, so each bad value costs about one extra pass over the chunk), or halved when
    the error names none. Values that end up alone, or in a rejected chunk of at most
    SLOW_CHUNK, are added to ``slow``. A wrong hint costs time, not correctness: the slow
    path reads a good value too.
    """
    pieces: list[tuple[np.ndarray, pa.Table]] = []
    todo = [index]
    while todo:
        index = todo.pop()
        if len(index) == 0:
            continue
        table, bad_row = _read_chunk(values.take(pa.array(index)))
        if table is not None:
            pieces.append((index, table))
        elif len(index) <= SLOW_CHUNK:
            slow.extend(index.tolist())
        elif bad_row is not None and bad_row < len(index):
            slow.append(int(index[bad_row]))
            todo += [index[bad_row + 1 :], index[:bad_row]]
        else:
            half = len(index) // 2
            todo += [index[half:], index[:half]]
    return pieces


def _read_chunk(chunk: pa.Array) -> tuple[pa.Table | None, int | None]:
    """(one row per value, None), or (None, the row the reader's error names, if it names one)."""
    lines = pc.binary_join_element_wise(chunk, pa.scalar(b"\n"), b"")
    offsets = np.frombuffer(lines.buffers()[1], np.int32, len(lines) + 1, lines.offset * 4)
    text = lines.buffers()[2][offsets[0] : offsets[-1]]
    options = pj.ReadOptions(use_threads=False, block_size=max(len(text) + 1, 1 << 16))  # one block: rows count from 0
    try:
        table = pj.read_json(pa.BufferReader(text), read_options=options, parse_options=_PARSE_OPTIONS)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        named = _ROW_IN_ERROR.search(str(error))
        return None, int(named.group(1)) if named else None
    return (table, None) if table.num_rows == len(chunk) else (None, None)


def _utf8(values: pa.Array) -> pa.Array | bool:
    """True, or per value whether it is valid UTF-8 (the cast checks the whole batch at once)."""
    try:
        values.cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([_decodes(raw) for raw in values.to_pylist()])
    return True


def _decodes(raw: bytes | None) -> bool:
    try:
        raw is None or raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _read_one(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """A value the batch reader rejected: (its row, why it is not a sample), either may be None.

    A record with a field of the wrong type keeps its other fields (its cluster names it).
    """
    try:
        record = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return None, "not a JSON object"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    row: dict[str, Any] = {}
    wrong: list[str] = []
    for field in ARROW_SCHEMA:
        ok, row[field.name] = _typed(record.get(field.name), field.type)
        if not ok:
            wrong.append(f"{field.name} (expected {_type_name(field.type)})")
    return row, f"wrong field type: {', '.join(wrong)}" if wrong else None


def _typed(value: Any, kind: pa.DataType) -> tuple[bool, Any]:
    """(fits the field, the value as stored): JSON null fits any field; booleans fit none."""
    if value is None:
        return True, None
    if isinstance(value, bool):
        return False, None
    if kind in _INT_RANGES:
        limit = _INT_RANGES[kind]
        fits = isinstance(value, int) and -limit <= value < limit
        return fits, value if fits else None
    if pa.types.is_floating(kind):
        if not isinstance(value, int | float):
            return False, None
        try:
            return True, float(value)
        except OverflowError:  # an integer beyond a double is infinite, which the finite check names
            return True, float("inf") if value > 0 else float("-inf")
    return isinstance(value, str), value if isinstance(value, str) else None


def _type_name(kind: pa.DataType) -> str:
    if kind in _INT_RANGES:
        return f"a {kind.bit_width}-bit integer"
    return "a number" if pa.types.is_floating(kind) else "a string"


def _in_order(pieces: list[tuple[np.ndarray, pa.Table]], size: int) -> pa.Table:
    """The pieces' rows back in record order, NULL rows for records in no piece."""
    covered = sum(len(index) for index, _ in pieces)
    if len(pieces) == 1 and covered == size:
        return pieces[0][1]
    if covered < size:
        missing = np.ones(size, bool)
        for index, _ in pieces:
            missing[index] = False
        gaps = np.flatnonzero(missing)
        nulls = pa.table([pa.nulls(len(gaps), f.type) for f in ARROW_SCHEMA], schema=ARROW_SCHEMA)
        pieces = [*pieces, (gaps, nulls)]
    order = np.concatenate([index for index, _ in pieces])
    table = pa.concat_tables([table for _, table in pieces])
    return table.take(pa.array(np.argsort(order, kind="stable")))


def _texts_at(texts: dict[int, str], size: int) -> pa.Array:
    if not texts:
        return pa.nulls(size, pa.string())
    column = np.full(size, None, object)
    for index, text in texts.items():
        column[index] = text
    return pa.array(column, pa.string())


def _first_error(
    rows: pa.RecordBatch, values: pa.Array, size: pa.Array, too_big: pa.Array, unreadable: pa.Array, max_bytes: int
) -> pa.Array:
    """Each record's first failing check (module docstring), NULL for a valid sample.

    A check's reason text is built only when some record fails it: batches are nearly always
    valid, and building every reason up front was a measurable share of decoding.
    """
    missing = _missing_fields(rows)
    version = rows.column("v")
    checks: list[tuple[pa.Array, Callable[[], pa.Array | str]]] = [
        (pc.is_null(values), lambda: "empty record (null value)"),
        (too_big, lambda: _join("oversized: ", size, f" bytes > spark.max_record_bytes {max_bytes}")),
        (pc.is_valid(unreadable), lambda: unreadable),
        (pc.is_valid(missing), lambda: _join("missing field(s): ", missing)),
        (
            pc.not_equal(version, SCHEMA_VERSION),
            lambda: _join("unsupported schema version v=", version, f" (this job reads v={SCHEMA_VERSION})"),
        ),
        (pc.invert(pc.is_finite(rows.column("value"))), lambda: "value is not finite (NaN or Infinity)"),
        (
            pc.invert(pc.is_in(rows.column("source"), pa.array(SOURCES))),
            lambda: _join("unknown source '", rows.column("source"), "'"),
        ),
        (
            pc.invert(pc.is_in(rows.column("kind"), pa.array(KINDS))),
            lambda: _join("unknown kind '", rows.column("kind"), "'"),
        ),
    ]
    reasons = [pa.nulls(rows.num_rows, pa.string())]
    for failed, reason in checks:
        failed = pc.fill_null(failed, False)
        if pc.any(failed).as_py():
            reasons.append(pc.if_else(failed, reason(), _NO_TEXT))
    return pc.coalesce(*reasons)


def _missing_fields(rows: pa.RecordBatch) -> pa.Array:
    """The required fields a row lacks, as "a, b", NULL when it has them all.

    Row by row over the rows that lack any (few): pyarrow's binary_join_element_wise with
    null_handling="skip" drops the rows whose inputs are all NULL (pyarrow 26).
    """
    absent = np.column_stack([rows.column(name).is_null().to_numpy(zero_copy_only=False) for name in REQUIRED_FIELDS])
    names = np.array(REQUIRED_FIELDS)
    texts = {index: ", ".join(names[absent[index]]) for index in np.flatnonzero(absent.any(axis=1)).tolist()}
    return _texts_at(texts, rows.num_rows)


def _join(*parts: Any) -> pa.Array:
    """Element-wise concatenation of text and columns (numbers as their decimal text)."""
    texts = [part if isinstance(part, str) else pc.cast(part, pa.string()) for part in parts]
    return pc.binary_join_element_wise(*texts, "")


def _null_where(condition: pa.Array, column: pa.Array) -> pa.Array:
    return pc.if_else(condition, pa.scalar(None, column.type), column)


def _raw_texts(values: pa.Array, dead: pa.Array) -> pa.Array:
    """A dead letter's raw value as text (invalid UTF-8 replaced), cut at DEAD_LETTER_RAW_CHARS."""
    texts: dict[int, str] = {}
    for index in np.flatnonzero(dead.to_numpy(zero_copy_only=False)).tolist():
        raw = values[index].as_py()
        if raw is None:
            continue
        text = raw.decode("utf-8", "replace")
        if len(text) > DEAD_LETTER_RAW_CHARS:
            text = f"{text[:DEAD_LETTER_RAW_CHARS]}… [truncated to {DEAD_LETTER_RAW_CHARS} of {len(text)} characters]"
        texts[index] = text
    return _texts_at(texts, len(values))
