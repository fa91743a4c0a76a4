"""Rows flattened by Debezium's ExtractNewRecordState SMT (`mode: flattened`) as the envelope decode reads.

The SMT replaces the envelope by the row itself and, when configured, adds metadata fields:
`__deleted` (`delete.tombstone.handling.mode=rewrite`), `__op`, `__ts_ms` and `__source_*`
(`add.fields`). This module turns those back into the envelope's op, before/after and source,
so decode orders, judges and types flattened rows exactly like enveloped ones.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from hudi_cdc.debezium_types import FLAT_METADATA_PREFIX as _P
from hudi_cdc.decode_checks import non_data_reason
from hudi_cdc.decode_order import SOURCE_STRUCT
from hudi_cdc.events import Op

_FLAT_METADATA = StructType(
    [
        StructField(f"{_P}op", StringType()),
        # "true"/"false" (a JSON boolean reads as the same text)
        StructField(f"{_P}deleted", StringType()),
        StructField(f"{_P}ts_ms", LongType()),
        *[StructField(f"{_P}source_{f.name}", f.dataType) for f in SOURCE_STRUCT.fields],
    ]
)
"""The fields ExtractNewRecordState adds to a flattened row that decode reads (`add.fields=op,
ts_ms,source.ts_ms,source.file,...` and `__deleted` of the `rewrite` delete handling)."""


def flattened_envelope(row_text: Column) -> Column:
    """A flattened row (ExtractNewRecordState) as the Debezium envelope decode reads.

    A row marked `__deleted` (or with `__op` d) is a delete whose `before` is the row; any other
    row is the `after` of its `__op`, an update when the SMT did not add the op. Records the SMT
    passes through unchanged keep their own op: a logical-decoding message's `m`, none for a
    schema change or transaction marker (both skipped by `non_data_reason`).
    """
    meta = F.from_json(row_text, _FLAT_METADATA)
    marked = (F.lower(meta[f"{_P}deleted"]) == "true") | (meta[f"{_P}op"] == Op.DELETE.value)
    deleted = F.coalesce(marked, F.lit(False))  # either field may be missing
    own_op = F.get_json_object(row_text, "$.op")
    op = (
        F.when(own_op == "m", own_op)
        .when(non_data_reason(F.lit(None).cast("string"), row_text).isNotNull(), F.lit(None).cast("string"))
        .when(deleted, F.lit(Op.DELETE.value))
        .otherwise(F.coalesce(meta[f"{_P}op"], F.lit(Op.UPDATE.value)))
    )
    return F.struct(
        op.alias("op"),
        meta[f"{_P}ts_ms"].alias("ts_ms"),
        F.when(deleted, row_text).alias("before"),
        F.when(~deleted, row_text).alias("after"),
        F.struct(*[meta[f"{_P}source_{f.name}"].alias(f.name) for f in SOURCE_STRUCT.fields]).alias("source"),
    )
