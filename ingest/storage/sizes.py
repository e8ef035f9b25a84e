"""The one parser of sizes in settings (every `BALANCE_*` size, the SQL workers' memory
limit): a number of bytes, or a number and a unit, `64MiB`, `1GB`, `512 kib` (KB/MB/GB/TB are
powers of 1000, KiB/MiB/GiB/TiB of 1024; the B may be left out: `2g`)."""

from __future__ import annotations

import re

MiB = 1024 * 1024

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?)(i?)b?\s*")


def parse_size(text: str | int | float) -> int:
    """Bytes in `text`; ValueError naming it when it is no size."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, (int, float)):
        return int(text)
    m = _SIZE.fullmatch(str(text).lower())
    if not m:
        raise ValueError(f"not a size: {text!r} (a number of bytes, or with a unit: 64MiB, 1GB)")
    number, unit, binary = float(m.group(1)), m.group(2), m.group(3)
    if binary and not unit:
        raise ValueError(f"not a size: {text!r} (a number of bytes, or with a unit: 64MiB, 1GB)")
    base = 1024 if binary else 1000
    power = " kmgt".index(unit) if unit else 0
    return int(number * base**power)
