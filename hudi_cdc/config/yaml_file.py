"""The job file's YAML, read strictly: a key given twice in one mapping is an error, not "the last wins";
and where the file is (a local path or a cluster storage's URI)."""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing duplicate keys (YAML 1.2 says keys are unique; PyYAML keeps the last)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` merges; its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                first = seen[key].start_mark
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first on line {first.line + 1}): a key may appear once per mapping",
                    key_node.start_mark,
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def read_yaml(text: str) -> Any:
    """The YAML document in `text`, with unique keys in every mapping.

    Raises:
        yaml.YAMLError: not valid YAML, or a key given twice in one mapping.
    """
    return yaml.load(text, Loader=_StrictLoader)


_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+)://")


def is_remote(location: str) -> bool:
    """Whether the job file at `location` is on a cluster's storage (`hdfs://`, `s3a://`, ...), not a local path.

    `file://` is local; a one-letter scheme is a Windows drive, never a URI.
    """
    match = _URI.match(location)
    return match is not None and match["scheme"].lower() != "file"
