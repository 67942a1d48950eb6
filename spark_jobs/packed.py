"""Arrow tables carried through Spark as one binary cell: many samples per Spark row.

Why: Spark spends its CPU per row, not per byte: a sample crossing as its own row cost more
than the job's whole per-sample budget (bench/RECORDS.md). Packed, a Spark row holds thousands of samples as one
Arrow IPC stream, and Spark keeps doing what only it does here: offsets and state in the
checkpoint, the watermark, the exchange to the state's partition, the triggers.

A packed frame has the single column :data:`PACKED_DDL`: decoding after Spark's native source
yields it (``parse.py``), and so does the bundled Kafka source's reader when it decodes without
routing. Routed frames (``route.py``) carry packed cells too, one per state bucket.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

#: Spark's schema of a packed frame: one Arrow IPC stream of rows per Spark row.
PACKED_DDL = "samples binary"
PACKED_SCHEMA = pa.schema([pa.field("samples", pa.binary())])


def pack_bytes(table: pa.Table | pa.RecordBatch, compression: str | None = None) -> bytes:
    """The rows as one Arrow IPC stream, its buffers compressed with ``compression`` (e.g. lz4)."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write(table)
    return sink.getvalue().to_pybytes()


def pack(table: pa.Table | pa.RecordBatch) -> pa.RecordBatch:
    """A PACKED_SCHEMA batch of one row holding all of ``table``'s rows."""
    return pa.RecordBatch.from_arrays([pa.array([pack_bytes(table)], pa.binary())], schema=PACKED_SCHEMA)


def pack_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: each non-empty batch of plain rows → one packed row."""
    for batch in batches:
        if batch.num_rows:
            yield pack(batch)


def unpack(blobs: Iterable[bytes | None]) -> pa.Table:
    """The rows of packed cells, in order, as one table (all cells must share a schema)."""
    tables = [pa.ipc.open_stream(blob).read_all() for blob in blobs if blob]
    if not tables:
        raise ValueError("unpack needs at least one packed cell")
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def packed_cells(batch: pa.RecordBatch) -> list[bytes]:
    """The packed cells of a batch of a packed frame (binary or large_binary column)."""
    return [cell for cell in batch.column(0).to_pylist() if cell]
